//! The JSON report: [`super::Report`] serialized as is (schema in `docs/json-report.md`).

use super::{RenderOptions, Renderer, Report};

/// Pretty-printed JSON.
pub struct Json;

impl Renderer for Json {
    fn render(
        &self,
        report: &Report,
        _opts: &RenderOptions,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, report)?;
        writeln!(out)
    }
}
