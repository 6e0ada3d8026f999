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
        // serialized into a vector first: through `dyn Write`, every piece of punctuation
        // and indentation would be a dynamic call
        let mut buf = Vec::with_capacity(1 << 16);
        serde_json::to_writer_pretty(&mut buf, report)?;
        buf.push(b'\n');
        out.write_all(&buf)
    }
}
