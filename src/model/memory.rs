//! Device memory events, folded as they are read.
//!
//! `profile_memory=True` makes the profiler record every allocation and free of the caching
//! allocator as a `[memory]` instant (`Addr`, `Bytes` — negative for a free —, `Total
//! Allocated`, `Total Reserved`, the device). In some traces they are most of the events, so
//! the reader does not keep them: [`MemoryBuilder`] pairs each free with the allocation of the
//! same address as the events arrive (in file order) and keeps one 32-byte [`MemBlock`] per
//! allocation, plus the reserved total only when it changes. The timeline (allocated bytes at
//! any time) is rebuilt from the blocks: the allocated total before the first event, plus the
//! blocks allocated since, minus those freed.
//!
//! Host memory (`Device Type` 0: the CPU allocator, which torch records with
//! `profile_memory=True` on any run, CPU-only ones included) is folded the same way under the
//! device id [`CPU_DEVICE`].

use super::fasthash::HashMap;
use super::{Ns, NONE};

/// Device id of host (CPU) memory events (`Device Type` 0 in Kineto, which records `Device Id`
/// -1): their timeline is built like a device's.
pub const CPU_DEVICE: i32 = -1;

/// One device memory event as the reader hands it over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemEvent {
    /// When, ns.
    pub ts: Ns,
    /// Address of the block (`Addr`; 0 when absent): a free names the address it frees.
    pub addr: u64,
    /// Bytes allocated (> 0) or freed (< 0).
    pub bytes: i64,
    /// Bytes allocated on the device after this event (`Total Allocated`; -1 when absent).
    pub total_allocated: i64,
    /// Bytes the caching allocator holds from the driver after this event (`Total Reserved`;
    /// -1 when absent).
    pub total_reserved: i64,
    /// Device id (`Device Id`).
    pub device: i32,
    /// The host thread (index into [`super::Trace::threads`]).
    pub thread: u32,
}

/// One allocation, from its allocation to its free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemBlock {
    /// Allocated at, ns ([`Ns::MIN`]: before the trace began — only its free was recorded).
    pub alloc: Ns,
    /// Freed at, ns ([`Ns::MAX`]: still allocated at the end of the trace).
    pub free: Ns,
    /// Size, bytes.
    pub bytes: u64,
    /// Host thread that allocated it ([`NONE`] for blocks allocated before the trace).
    pub thread: u32,
    /// Device id.
    pub device: i32,
}

impl MemBlock {
    /// True when the block is allocated at `t` (allocations at `t` count, frees at `t` not
    /// yet: see [`MemoryEvents`]).
    pub fn live_at(&self, t: Ns) -> bool {
        self.alloc <= t && self.free >= t
    }
}

/// `Total Reserved` after an event that changed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReservedSample {
    /// When, ns.
    pub ts: Ns,
    /// Device id.
    pub device: i32,
    /// Bytes reserved by the caching allocator.
    pub bytes: i64,
    /// Host thread of the event that changed it (index into [`super::Trace::threads`]): when
    /// the total grew, the caching allocator asked the driver for memory on this thread.
    pub thread: u32,
}

/// The device memory events of a trace (see the module docs).
///
/// Events at the same timestamp are taken allocations first, frees after: the allocated total
/// at `t` counts every block allocated at or before `t` and freed at or after `t`
/// ([`MemBlock::live_at`]), which is the highest value the total reached at `t`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryEvents {
    /// Allocations, by allocation time (file order on ties).
    pub blocks: Vec<MemBlock>,
    /// `Total Reserved` where it changed, by time.
    pub reserved: Vec<ReservedSample>,
    /// Per device: bytes allocated before its first event (`Total Allocated` − `Bytes` of the
    /// earliest event), and that event's time.
    pub base: Vec<(i32, Ns, i64)>,
    /// Per device: the largest `Total Allocated` recorded.
    pub recorded_peak: Vec<(i32, i64)>,
    /// Events folded.
    pub events: u64,
    /// Frees whose address had no recorded allocation (blocks allocated before the trace).
    pub unmatched_frees: u64,
    /// Events without `Addr` (PyTorch before 1.10): frees cannot be paired with their
    /// allocations, so the totals over time hold but not which blocks are live.
    pub without_addr: u64,
}

impl MemoryEvents {
    /// True when no memory event was recorded.
    pub fn is_empty(&self) -> bool {
        self.events == 0
    }
    /// The times the caching allocator grew (`Total Reserved` rose above its previous value
    /// on the same device: it obtained memory from the driver — `cudaMalloc`, `hipMalloc`, or
    /// `cuMemCreate`/`cuMemMap` with expandable segments, calls the profiler may not record),
    /// with the host thread, in time order. A device's first sample has no previous value and
    /// is not counted.
    pub fn reserved_growth(&self) -> impl Iterator<Item = (Ns, u32)> + '_ {
        let mut last: Vec<(i32, i64)> = Vec::new();
        self.reserved.iter().filter_map(move |r| {
            let grew = match last.iter_mut().find(|l| l.0 == r.device) {
                Some(l) => std::mem::replace(&mut l.1, r.bytes) < r.bytes,
                None => {
                    last.push((r.device, r.bytes));
                    false
                }
            };
            grew.then_some((r.ts, r.thread))
        })
    }
    /// Devices with events: the GPUs ascending, then the CPU ([`CPU_DEVICE`]).
    pub fn devices(&self) -> Vec<i32> {
        let mut d: Vec<i32> = self.base.iter().map(|b| b.0).collect();
        d.sort_unstable_by_key(|&d| (d == CPU_DEVICE, d));
        d
    }
}

/// Folds [`MemEvent`]s into [`MemoryEvents`] (see the module docs). Feed the events in file
/// order; the result does not depend on how the file was split into blocks.
#[derive(Debug, Default)]
pub struct MemoryBuilder {
    out: MemoryEvents,
    /// Open allocations: (device, address) → index in `out.blocks`.
    open: HashMap<(i32, u64), u32>,
    /// Per device: last reserved total seen.
    last_reserved: Vec<(i32, i64)>,
    sorted: bool,
    last_ts: Ns,
}

impl MemoryBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        MemoryBuilder {
            sorted: true,
            last_ts: Ns::MIN,
            ..Default::default()
        }
    }

    /// Folds one event.
    pub fn push(&mut self, e: &MemEvent) {
        let o = &mut self.out;
        o.events += 1;
        if e.ts < self.last_ts {
            self.sorted = false;
        }
        self.last_ts = self.last_ts.max(e.ts);
        if e.addr == 0 {
            o.without_addr += 1;
        }
        // without `Total Allocated` the totals count from 0 at the first event
        let base_total = if e.total_allocated >= 0 {
            e.total_allocated
        } else {
            e.bytes
        };
        match o.base.iter_mut().find(|b| b.0 == e.device) {
            Some(b) if e.ts < b.1 && e.total_allocated >= 0 => {
                *b = (e.device, e.ts, base_total - e.bytes)
            }
            Some(_) => {}
            None => o.base.push((e.device, e.ts, base_total - e.bytes)),
        }
        if e.total_allocated >= 0 {
            match o.recorded_peak.iter_mut().find(|b| b.0 == e.device) {
                Some(b) => b.1 = b.1.max(e.total_allocated),
                None => o.recorded_peak.push((e.device, e.total_allocated)),
            }
        }
        if e.total_reserved >= 0 {
            let last = match self.last_reserved.iter_mut().find(|r| r.0 == e.device) {
                Some(r) => r,
                None => {
                    self.last_reserved.push((e.device, -1));
                    self.last_reserved.last_mut().expect("just pushed")
                }
            };
            if last.1 != e.total_reserved {
                last.1 = e.total_reserved;
                o.reserved.push(ReservedSample {
                    ts: e.ts,
                    device: e.device,
                    bytes: e.total_reserved,
                    thread: e.thread,
                });
            }
        }
        if e.bytes > 0 {
            let i = o.blocks.len() as u32;
            o.blocks.push(MemBlock {
                alloc: e.ts,
                free: Ns::MAX,
                bytes: e.bytes as u64,
                thread: e.thread,
                device: e.device,
            });
            // an address allocated again without a recorded free: the old block stays open
            // until the end (the free was lost); the new one takes the address
            if e.addr != 0 {
                self.open.insert((e.device, e.addr), i);
            }
        } else if e.bytes < 0 {
            match self.open.remove(&(e.device, e.addr)) {
                Some(i) => o.blocks[i as usize].free = e.ts,
                None => {
                    o.unmatched_frees += 1;
                    o.blocks.push(MemBlock {
                        alloc: Ns::MIN,
                        free: e.ts,
                        bytes: e.bytes.unsigned_abs(),
                        thread: NONE,
                        device: e.device,
                    });
                }
            }
        }
    }

    /// The folded events, blocks by allocation time and reserved samples by time.
    pub fn finish(mut self) -> MemoryEvents {
        if !self.sorted {
            self.out.blocks.sort_by_key(|b| b.alloc);
            self.out.reserved.sort_by_key(|r| r.ts);
        } else if !self.out.blocks.windows(2).all(|w| w[0].alloc <= w[1].alloc) {
            // frees of blocks allocated before the trace sit where they were read
            self.out.blocks.sort_by_key(|b| b.alloc);
        }
        self.out.blocks.shrink_to_fit();
        self.out.reserved.shrink_to_fit();
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ts: Ns, addr: u64, bytes: i64, total: i64, reserved: i64) -> MemEvent {
        MemEvent {
            ts,
            addr,
            bytes,
            total_allocated: total,
            total_reserved: reserved,
            device: 0,
            thread: 3,
        }
    }

    #[test]
    fn pairs_frees_with_allocations() {
        let mut b = MemoryBuilder::new();
        b.push(&ev(10, 0xa, 100, 1100, 2000)); // 1000 allocated before the trace
        b.push(&ev(20, 0xb, 50, 1150, 2000));
        b.push(&ev(30, 0xa, -100, 1050, 2000));
        b.push(&ev(40, 0xc, -500, 550, 4000)); // allocated before the trace
        let m = b.finish();
        assert_eq!(m.events, 4);
        assert_eq!(m.base, vec![(0, 10, 1000)]);
        assert_eq!(m.recorded_peak, vec![(0, 1150)]);
        assert_eq!(m.unmatched_frees, 1);
        assert_eq!(m.blocks.len(), 3);
        assert_eq!(m.blocks[0].alloc, Ns::MIN); // sorted first
        assert_eq!((m.blocks[1].alloc, m.blocks[1].free), (10, 30));
        assert_eq!((m.blocks[2].alloc, m.blocks[2].free), (20, Ns::MAX));
        assert_eq!(m.reserved.len(), 2);
        assert_eq!(m.reserved[1].bytes, 4000);
        assert_eq!(m.reserved_growth().collect::<Vec<_>>(), vec![(40, 3)]);
        assert!(m.blocks[1].live_at(30) && !m.blocks[1].live_at(31));
    }
}
