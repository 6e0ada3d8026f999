//! A small builder for traces made in code: unit tests of analyses and rules use it to state
//! a scenario in a few lines (times in microseconds, like the traces themselves).

use super::*;

/// Builds a [`Trace`] event by event. Times are µs (converted to ns).
#[derive(Debug)]
pub struct TraceBuilder {
    trace: Trace,
    memory: memory::MemoryBuilder,
    kernel_infos: KernelInfoTable,
    next_corr: u64,
    next_ext: u64,
}

impl Default for TraceBuilder {
    fn default() -> Self {
        Self::new()
    }
}

fn us(v: f64) -> Ns {
    (v * 1000.0).round() as Ns
}

impl TraceBuilder {
    /// An empty trace named `built-in-test`.
    pub fn new() -> Self {
        TraceBuilder {
            trace: Trace {
                source: Source {
                    path: "built-in-test".into(),
                    format: SourceFormat::Kineto,
                    bytes: 0,
                    compressed_bytes: None,
                    events: 0,
                },
                names: Interner::new(),
                devices: Vec::new(),
                threads: vec![Thread {
                    pid: 1,
                    tid: 1,
                    name: Some("main".into()),
                }],
                cpu: Vec::new(),
                gpu: Vec::new(),
                kernel_infos: Vec::new(),
                distributed: None,
                base_time_ns: None,
                warnings: Vec::new(),
                gpu_metrics: Vec::new(),
                op_shapes: Default::default(),
                op_flops: Default::default(),
                kernel_comms: Default::default(),
                op_comms: Default::default(),
                memory: Default::default(),
                clock_corrections: Vec::new(),
                os: Default::default(),
                kernel_classes: Default::default(),
                op_shape_index: Default::default(),
                bounds: Default::default(),
            },
            memory: memory::MemoryBuilder::new(),
            kernel_infos: KernelInfoTable::new(),
            next_corr: 1,
            next_ext: 1,
        }
    }

    /// Adds a device (`deviceProperties` entry).
    pub fn device(mut self, id: i64, name: &str, sm_count: u32, memory_bytes: u64) -> Self {
        self.trace.devices.push(Device {
            id,
            name: name.into(),
            sm_count: Some(sm_count),
            memory_bytes: Some(memory_bytes),
            compute_major: Some(8),
            compute_minor: Some(0),
            vendor: Vendor::Nvidia,
            ..Device::default()
        });
        self
    }

    /// Index of a host thread, created on first use.
    pub fn thread(&mut self, tid: i64) -> u32 {
        if let Some(i) = self.trace.threads.iter().position(|t| t.tid == tid) {
            return i as u32;
        }
        self.trace.threads.push(Thread {
            pid: 1,
            tid,
            name: None,
        });
        (self.trace.threads.len() - 1) as u32
    }

    /// Adds a host span on thread `tid`; returns its External id (fresh for ops/annotations).
    pub fn cpu(&mut self, kind: CpuKind, name: &str, tid: i64, start_us: f64, dur_us: f64) -> u64 {
        let thread = self.thread(tid);
        let name = self.trace.names.intern(name);
        let ext = match kind {
            CpuKind::Op | CpuKind::UserAnnotation => {
                self.next_ext += 1;
                self.next_ext
            }
            _ => 0,
        };
        self.trace.cpu.push(CpuEvent {
            start: us(start_us),
            dur: us(dur_us),
            name,
            thread,
            kind,
            is_module: false,
            external_id: ext,
            correlation: 0,
            owner_op: NONE,
        });
        ext
    }

    /// Adds an operator (`cpu_op`) on thread 1; returns its External id.
    pub fn op(&mut self, name: &str, start_us: f64, dur_us: f64) -> u64 {
        self.cpu(CpuKind::Op, name, 1, start_us, dur_us)
    }

    /// Adds a `user_annotation` on thread 1; returns its External id.
    pub fn annotation(&mut self, name: &str, start_us: f64, dur_us: f64) -> u64 {
        self.cpu(CpuKind::UserAnnotation, name, 1, start_us, dur_us)
    }

    /// Adds a runtime call on thread 1 belonging to op `ext` (0 = none); returns its
    /// correlation id.
    pub fn runtime(&mut self, name: &str, ext: u64, start_us: f64, dur_us: f64) -> u64 {
        let thread = self.thread(1);
        let name = self.trace.names.intern(name);
        let corr = self.next_corr;
        self.next_corr += 1;
        self.trace.cpu.push(CpuEvent {
            start: us(start_us),
            dur: us(dur_us),
            name,
            thread,
            kind: CpuKind::Runtime,
            is_module: false,
            external_id: ext,
            correlation: corr,
            owner_op: NONE,
        });
        corr
    }

    /// Adds a device activity launched by correlation `corr` (0 = unlinked).
    #[allow(clippy::too_many_arguments)]
    pub fn gpu(
        &mut self,
        kind: GpuKind,
        name: &str,
        device: i32,
        stream: i32,
        start_us: f64,
        dur_us: f64,
        corr: u64,
    ) -> &mut GpuEvent {
        let name = self.trace.names.intern(name);
        self.trace.gpu.push(GpuEvent {
            device,
            stream,
            correlation: corr,
            flow_linked: corr != 0,
            ..GpuEvent::new(name, kind, us(start_us), us(dur_us))
        });
        self.trace.gpu.last_mut().unwrap()
    }

    /// Sets the launch details of the last device event added: `f` edits a copy of its
    /// current details (grid, block, registers, occupancy, ...).
    pub fn kernel_info(&mut self, f: impl FnOnce(&mut KernelInfo)) {
        let g = self.trace.gpu.last_mut().expect("a device event");
        let mut info = *self.kernel_infos.get(g.info);
        f(&mut info);
        g.info = self.kernel_infos.intern(&info);
    }

    /// Convenience: an op that launches one kernel through `cudaLaunchKernel`.
    /// The launch takes `launch_us` from the op start; the kernel starts at `kernel_start_us`.
    pub fn op_with_kernel(
        &mut self,
        op: &str,
        kernel: &str,
        op_start_us: f64,
        op_dur_us: f64,
        kernel_start_us: f64,
        kernel_dur_us: f64,
    ) -> u64 {
        let ext = self.op(op, op_start_us, op_dur_us);
        let corr = self.runtime(
            "cudaLaunchKernel",
            ext,
            op_start_us + 1.0,
            (op_dur_us - 2.0).max(0.5),
        );
        self.gpu(
            GpuKind::Kernel,
            kernel,
            0,
            7,
            kernel_start_us,
            kernel_dur_us,
            corr,
        );
        ext
    }

    /// Records the inputs of the op with External id `ext` (JSON texts, like the trace's
    /// `Input Dims`, `Input type` and `Concrete Inputs`).
    pub fn shapes(&mut self, ext: u64, dims: &str, types: &str, concrete: &str) {
        let shape = OpShape {
            dims: self.trace.names.intern(dims),
            types: self.trace.names.intern(types),
            concrete: self.trace.names.intern(concrete),
        };
        self.trace.op_shapes.insert(ext, shape);
    }

    /// Records the FLOPs the profiler computed for the op with External id `ext`
    /// (`with_flops=True`).
    pub fn flops(&mut self, ext: u64, flops: u64) {
        self.trace.op_flops.insert(ext, flops);
    }

    /// Adds a device memory event at `ts_us` on thread 0 (bytes < 0 frees), with the totals
    /// after it; events are folded in the order they are added, like a reader's.
    pub fn memory(
        &mut self,
        device: i32,
        ts_us: f64,
        addr: u64,
        bytes: i64,
        total_allocated: i64,
        total_reserved: i64,
    ) {
        self.memory.push(&memory::MemEvent {
            ts: (ts_us * 1000.0).round() as Ns,
            addr,
            bytes,
            total_allocated,
            total_reserved,
            device,
            thread: 0,
        });
        if let Some(d) = self
            .trace
            .devices
            .iter_mut()
            .find(|d| d.id == device as i64)
        {
            let p = d.peak_allocated.get_or_insert(0);
            *p = (*p).max(total_allocated.max(0) as u64);
        }
    }

    /// Finishes: sorts and links like a reader does.
    pub fn build(mut self) -> Trace {
        self.trace.source.events = (self.trace.cpu.len() + self.trace.gpu.len()) as u64;
        self.trace.kernel_infos = self.kernel_infos.into_vec();
        self.trace.memory = self.memory.finish();
        self.trace.finalize();
        self.trace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_kernel_to_op() {
        let mut b = TraceBuilder::new().device(0, "NVIDIA A100", 108, 40 << 30);
        b.op_with_kernel("aten::mm", "gemm_kernel", 10.0, 20.0, 25.0, 100.0);
        let t = b.build();
        let k = &t.gpu[0];
        let op = t.owner_op_of(k).unwrap();
        assert_eq!(t.name(t.cpu[op as usize].name), "aten::mm");
        assert!(t.devices[0].active);
    }

    /// One described device and another id active: one board (visible-devices renumbering),
    /// not a named idle device beside an unnamed active one.
    #[test]
    fn renumbered_device_keeps_its_name() {
        let kernel_on = |listed: &[i64], active: i32| {
            let mut b = TraceBuilder::new();
            for &id in listed {
                b = b.device(id, "AMD Instinct MI300X", 304, 192 << 30);
            }
            let ext = b.op("aten::mm", 0.0, 10.0);
            let c = b.runtime("hipLaunchKernel", ext, 2.0, 5.0);
            b.gpu(GpuKind::Kernel, "gemm", active, 7, 10.0, 5.0, c);
            b.build()
        };
        let t = kernel_on(&[0], 9);
        assert_eq!(t.devices.len(), 1, "{:?}", t.devices);
        assert_eq!(t.devices[0].id, 9);
        assert_eq!(t.devices[0].name, "AMD Instinct MI300X");
        assert!(t.devices[0].active);
        assert!(t.warnings.iter().any(|w| w.code == "device-renumbered"));
        // several described devices: the active one is a device of its own
        let t = kernel_on(&[0, 1], 9);
        assert_eq!(t.devices.len(), 3);
        assert!(t.device(9).unwrap().name.is_empty());
        assert!(t.warnings.is_empty());
    }
}
