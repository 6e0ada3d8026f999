//! The window on real traces: HTA's own expectation on its ns-resolution trace, the automatic
//! steady state on the diffusion traces, and the samples shipped in the repository.

mod common;

use std::collections::BTreeMap;

use stallscope::analysis::phases;
use stallscope::model::{Trace, NONE};
use stallscope::window::annotations::Annotations;
use stallscope::window::steps::analyze_steps;
use stallscope::window::{self, Window, WindowSpec};

fn select(t: &Trace, spec: &WindowSpec) -> (Annotations, Window) {
    let s = analyze_steps(t);
    let a = Annotations::build(t);
    let w = window::select(t, &s, &a, spec).unwrap_or_else(|e| panic!("{e}"));
    (a, w)
}

const NS_RESOLUTION: &str =
    "hta/tests__data__ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";

/// ../shared/reference/expected-values.md §4.1: HTA's `get_gpu_kernels_with_user_annotations`
/// on this trace gives 4,876 rows (kernels, copies and fills; the file has 6,095), 4 distinct
/// annotation values including −1, 27 under `Optimizer.step#SGD.step`, correlation 135139 →
/// `DistributedDataParallel.forward` / `Memcpy DtoD (Device -> Device)`, correlation 164926 →
/// `Optimizer.step#SGD.step` / `multi_tensor_apply_kernel`.
///
/// HTA drops the last ProfilerStep: it keeps the events that start before `ProfilerStep#105`,
/// and the GPU events whose launch does. The window `--steps 101..104` is exactly that set of
/// device activities. HTA then gives each one the shortest overlapping `gpu_user_annotation`
/// among those it kept — the fourth `Optimizer.step` GPU annotation starts after its cut (the
/// GPU runs ~90 ms behind the host), so its 9 kernels get −1: 3 × 9 = 27.
#[test]
fn hta_kernels_with_user_annotations_on_ns_resolution_trace() {
    let Some(p) = common::corpus_file(NS_RESOLUTION) else {
        return;
    };
    let t = common::load(&p);
    let activities = t.gpu.iter().filter(|g| g.is_activity()).count();
    assert_eq!(activities, 6095);
    let (ann, w) = select(&t, &window::parse_steps("101..104").unwrap());
    let rows = phases::hta_kernel_annotations(&t, &w);
    assert_eq!(rows.len(), 4876);
    let mut by: BTreeMap<String, u64> = BTreeMap::new();
    for &(_, a) in &rows {
        let name = if a == NONE {
            "-1".to_string()
        } else {
            t.name(t.gpu[a as usize].name).to_string()
        };
        *by.entry(name).or_default() += 1;
    }
    assert_eq!(by.len(), 4, "{by:?}");
    assert!(by.contains_key("-1"));
    assert_eq!(by["Optimizer.step#SGD.step"], 27, "{by:?}");
    let by_corr = |c: u64| -> Vec<(String, String)> {
        rows.iter()
            .filter(|&&(g, _)| t.gpu[g as usize].correlation == c)
            .map(|&(g, a)| {
                (
                    t.name(t.gpu[a as usize].name).to_string(),
                    t.name(t.gpu[g as usize].name).to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        by_corr(135139),
        [(
            "DistributedDataParallel.forward".to_string(),
            "Memcpy DtoD (Device -> Device)".to_string()
        )]
    );
    let c = by_corr(164926);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].0, "Optimizer.step#SGD.step");
    assert!(c[0].1.contains("multi_tensor_apply_kernel"), "{}", c[0].1);

    // Our own phases, by launch: the same 4,876 activities, none unannotated, and all four
    // optimizer steps' 4 × 9 kernels under Optimizer.step (HTA loses the last nine).
    let pa = phases::phases(&t, &ann, &w);
    assert_eq!(pa.activities, 4876);
    let get = |path: &str| pa.phases.iter().find(|x| x.path == path).unwrap();
    let opt = get("## optimizer ##/Optimizer.step#SGD.step");
    assert_eq!((opt.calls, opt.kernel_count), (4, 36));
    assert!(pa.phases.iter().all(|x| x.path != phases::UNANNOTATED));
    let roots: u64 = pa
        .phases
        .iter()
        .filter(|x| x.depth == 0)
        .map(|x| x.kernel_count)
        .sum();
    assert_eq!(roots, 4876);
    // The backward pass runs on the autograd thread (2,976 launches, the ones HTA's GPU-side
    // rule leaves at −1) and lands under `## backward ##`, with the 24 launched by the main
    // thread inside it (HTA's `## backward ##` rows).
    let bw = get("## backward ##");
    assert_eq!((bw.calls, bw.kernel_count), (4, 3000));
    assert_eq!(bw.backward_kernel_count, 2976);
    assert_eq!(get("## forward ##").backward_kernel_count, 0);
    assert_eq!(get("## forward ##").kernel_count, 1840);
    assert_eq!(by["DistributedDataParallel.forward"], 1840);
}

const FLUX: &str =
    "tracelens/tests__traces__inference__xdit_flux.1_aiter_sage__profile_trace_rank_0.json.gz";
const SD35: &str = "tracelens/tests__traces__inference__xdit_sd_3.5__profile_trace_rank_0.json.gz";

/// The xDiT diffusion traces: one ProfilerStep each, profiled after torch.compile had run (the
/// compiled graphs are called, never compiled: no compile work may be reported), with the
/// pipeline under one annotation whose device span is TraceLens's GPU total
/// (expected-values.md §3: 226.595684 ms and 1171.628656 ms).
#[test]
fn diffusion_traces_window_and_phases() {
    for (rel, root, total_ms, activities, transformer, calls) in [
        (
            FLUX,
            "execute_diffusion_1_256x256",
            226.595684,
            7866,
            "nn.Module: OptimizedModule_0",
            4,
        ),
        (
            SD35,
            "model_inference",
            1171.628656,
            8066,
            "nn.Module: SD3Transformer2DModel_0",
            4,
        ),
    ] {
        let Some(p) = common::corpus_file(rel) else {
            return;
        };
        let t = common::load(&p);
        let (ann, w) = select(&t, &WindowSpec::Auto);
        assert_eq!(w.steps.len(), 1, "{rel}");
        assert!(w.excluded.is_empty(), "{rel}: {:?}", w.excluded);
        assert_eq!(w.compile.total, 0, "{rel}: {:?}", w.compile.by_kind);
        assert!(w.notes.is_empty(), "{rel}: {:?}", w.notes);
        let pa = phases::phases(&t, &ann, &w);
        assert_eq!(pa.activities, activities, "{rel}");
        let r = pa.phases.iter().find(|x| x.path == root).unwrap();
        assert_eq!(
            (r.depth, r.calls, r.kernel_count),
            (0, 1, activities),
            "{rel}"
        );
        // the device span of the pipeline is the first-to-last device activity
        let ms = r.gpu_span as f64 / 1e6;
        assert!(
            (ms - total_ms).abs() < 1e-6,
            "{rel}: {ms} ms vs TraceLens {total_ms} ms"
        );
        // the transformer is called once per denoising step, under the pipeline
        let tr = pa
            .phases
            .iter()
            .find(|x| x.name == transformer && x.depth >= 1)
            .unwrap_or_else(|| panic!("{rel}: no {transformer}"));
        assert_eq!(tr.calls, calls, "{rel}");
        assert!(tr.path.starts_with(root), "{rel}: {}", tr.path);
        assert!(
            tr.gpu_time * 2 > r.gpu_time,
            "{rel}: the transformer dominates"
        );
        for x in &pa.phases {
            let kids: u64 = pa
                .phases
                .iter()
                .filter(|c| c.depth == x.depth + 1 && c.path.starts_with(&format!("{}/", x.path)))
                .map(|c| c.kernel_count)
                .sum();
            assert_eq!(
                x.kernel_count,
                x.self_kernel_count + kids,
                "{rel}: {}",
                x.path
            );
        }
        // --focus on the transformer: 4 calls, inside the one step
        let (_, f) = select(
            &t,
            &WindowSpec::Focus {
                name: transformer.into(),
                within: Box::new(WindowSpec::Auto),
            },
        );
        assert_eq!(f.focus.as_ref().unwrap().calls, calls);
        assert!(f.duration() < w.duration());
        let fa = phases::phases(&t, &ann, &f);
        assert_eq!(fa.activities, tr.kernel_count, "{rel}");
    }
}
