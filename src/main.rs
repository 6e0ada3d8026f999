fn main() {
    let path = std::env::args().nth(1).unwrap();
    let t0 = std::time::Instant::now();
    match stallscope::ingest::load(&path, &Default::default()) {
        Ok(t) => {
            let k = t.gpu.iter().filter(|g| g.kind == stallscope::model::GpuKind::Kernel).count();
            let rt = t.cpu.iter().filter(|g| g.kind == stallscope::model::CpuKind::Runtime).count();
            let dr = t.cpu.iter().filter(|g| g.kind == stallscope::model::CpuKind::Driver).count();
            let mc = t.gpu.iter().filter(|g| g.kind == stallscope::model::GpuKind::Memcpy).count();
            let ms = t.gpu.iter().filter(|g| g.kind == stallscope::model::GpuKind::Memset).count();
            let linked = t.gpu.iter().filter(|g| g.flow_linked).count();
            let launched = t.gpu.iter().filter(|g| g.launch != u32::MAX).count();
            println!("events {} bytes {} kernels {k} runtime {rt}+{dr} memcpy {mc} memset {ms} linked {linked} launched {launched} devices {:?} warnings {:?} in {:?}",
              t.source.events, t.source.bytes, t.devices.iter().map(|d| (d.id, d.name.clone(), d.sm_count)).collect::<Vec<_>>(), t.warnings, t0.elapsed());
        }
        Err(e) => { eprintln!("error: {e}"); std::process::exit(2) }
    }
}
