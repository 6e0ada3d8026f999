//! Peak throughput and memory bandwidth of common accelerators, keyed by the device name the
//! trace gives (`deviceProperties.name`), for the roofline and the tensor-core rules.
//!
//! Figures are the vendors' published **dense** peaks (no structured sparsity) at boost clock:
//! FP32 on the regular (non-tensor) pipes, TF32 / FP16-BF16 / FP8 on tensor (NVIDIA) or matrix
//! (AMD) cores, and DRAM bandwidth. They are upper bounds no kernel reaches; achieved shares are
//! computed against them. Where a part comes in several boards (A100 40/80 GB, H100 SXM/PCIe),
//! the name and, failing that, the memory size pick the board. Jetson figures are derived from
//! NVIDIA's sparse INT8 TOPS (÷ 4 for dense FP16) and are approximate. A device that is not in
//! the table gets no roofline (and the tensor-core rules fall back to the compute capability);
//! the report says so ([`missing_peak_notes`]: "no peak table for X").
//!
//! Conventions of the 2025-2026 rows: each row cites its vendor datasheet; figures given for a
//! system (NVL72 rack, 8-GPU HGX board) are divided by its GPU count; sparse figures are halved;
//! GeForce tensor figures are those with FP32 accumulation (what PyTorch's bf16/fp16 GEMMs
//! use; GeForce boards run FP16 accumulation at twice that rate); AMD's FP32 is the unpacked
//! vector rate (half the datasheet's packed "FP32 vector" figure), as for the MI300X row.
//! Where a datasheet gives only an FP4 figure (GB10, Jetson Thor) the other tensor peaks are
//! derived by halving per precision step and are approximate.

use crate::model::{Device, Vendor};

/// Published peaks of one device.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceSpec {
    /// Board name as shown in reports.
    pub name: &'static str,
    /// FP32 on the regular pipes, TFLOP/s.
    pub fp32: f64,
    /// TF32 (NVIDIA) / XF32-FP32 matrix (AMD) tensor peak, TFLOP/s (`None`: not supported).
    pub tf32: Option<f64>,
    /// FP16/BF16 tensor/matrix peak, TFLOP/s (`None`: no tensor cores).
    pub fp16: Option<f64>,
    /// FP8 tensor peak, TFLOP/s.
    pub fp8: Option<f64>,
    /// DRAM bandwidth, GB/s.
    pub mem_bw: f64,
    /// FP64 peak (the faster of vector and tensor/matrix FP64), TFLOP/s (`None`: not given).
    pub fp64: Option<f64>,
    /// FP4 tensor/matrix peak (NVFP4/MXFP4), TFLOP/s (`None`: not supported).
    pub fp4: Option<f64>,
    /// Streaming multiprocessors (NVIDIA) / compute units (AMD) of the board the figures are
    /// for (0: not checked). A trace whose device reports another count is another board of
    /// the same name (laptop, Max-Q, a cut-down part, one die of a two-die package) and gets
    /// no row ([`lookup`]).
    pub sms: u32,
}

impl DeviceSpec {
    /// True when the device has tensor / matrix cores.
    pub fn has_tensor_cores(&self) -> bool {
        self.fp16.is_some()
    }
    /// The fastest tensor peak an FP32 GEMM could reach without changing its inputs (TF32 when
    /// supported), else with bf16/fp16 autocast.
    pub fn tensor_peak_for_fp32(&self) -> Option<f64> {
        self.tf32.or(self.fp16)
    }
    /// The TF32 peak where it is faster than FP32 (not on GeForce Ada/Blackwell or L20, whose
    /// TF32 rate with FP32 accumulate equals their FP32 rate).
    pub fn tf32_faster(&self) -> Option<f64> {
        self.tf32.filter(|t| *t > self.fp32)
    }
    /// The peak an FP32 GEMM reaches on the path `fp32-matmul`'s advice enables: bf16/fp16
    /// autocast (the FP16/BF16 tensor peak at FP32 accumulate, as the table gives it), or TF32
    /// where that is faster; `None` without tensor cores.
    pub fn fp32_matmul_target(&self) -> Option<f64> {
        [self.fp16, self.tf32_faster()]
            .into_iter()
            .flatten()
            .reduce(f64::max)
    }
}

const fn spec(
    name: &'static str,
    fp32: f64,
    tf32: Option<f64>,
    fp16: Option<f64>,
    fp8: Option<f64>,
    mem_bw: f64,
) -> DeviceSpec {
    DeviceSpec {
        name,
        fp32,
        tf32,
        fp16,
        fp8,
        mem_bw,
        fp64: None,
        fp4: None,
        sms: 0,
    }
}

impl DeviceSpec {
    /// The same row with its FP64 and FP4 peaks (TFLOP/s).
    const fn with(self, fp64: Option<f64>, fp4: Option<f64>) -> DeviceSpec {
        DeviceSpec { fp64, fp4, ..self }
    }
    /// The same row with the SM / CU count of its board.
    const fn sms(self, sms: u32) -> DeviceSpec {
        DeviceSpec { sms, ..self }
    }
}

/// V100 SXM2 (also DGX Station V100).
pub const V100_SXM2: DeviceSpec = spec("V100 SXM2", 15.7, None, Some(125.0), None, 900.0).sms(80);
/// V100 PCIe.
pub const V100_PCIE: DeviceSpec = spec("V100 PCIe", 14.0, None, Some(112.0), None, 900.0).sms(80);
/// V100S PCIe.
pub const V100S: DeviceSpec = spec("V100S PCIe", 16.4, None, Some(130.0), None, 1134.0).sms(80);
/// T4.
pub const T4: DeviceSpec = spec("T4", 8.1, None, Some(65.0), None, 320.0).sms(40);
/// A10.
pub const A10: DeviceSpec = spec("A10", 31.2, Some(62.5), Some(125.0), None, 600.0).sms(72);
/// A10G (AWS variant: more FP32, half the tensor throughput of the A10).
pub const A10G: DeviceSpec = spec("A10G", 35.0, Some(35.0), Some(70.0), None, 600.0).sms(80);
/// A100 40 GB (SXM4 and PCIe).
pub const A100_40: DeviceSpec =
    spec("A100 40GB", 19.5, Some(156.0), Some(312.0), None, 1555.0).sms(108);
/// A100 80 GB SXM4.
pub const A100_80_SXM: DeviceSpec = spec(
    "A100 80GB SXM",
    19.5,
    Some(156.0),
    Some(312.0),
    None,
    2039.0,
)
.sms(108);
/// A100 80 GB PCIe.
pub const A100_80_PCIE: DeviceSpec = spec(
    "A100 80GB PCIe",
    19.5,
    Some(156.0),
    Some(312.0),
    None,
    1935.0,
)
.sms(108);
/// A30.
pub const A30: DeviceSpec = spec("A30", 10.3, Some(82.0), Some(165.0), None, 933.0).sms(56);
/// A40.
pub const A40: DeviceSpec = spec("A40", 37.4, Some(74.8), Some(149.7), None, 696.0).sms(84);
/// L4.
pub const L4: DeviceSpec = spec("L4", 30.3, Some(60.0), Some(121.0), Some(242.5), 300.0).sms(58);
/// L40S.
pub const L40S: DeviceSpec =
    spec("L40S", 91.6, Some(183.0), Some(362.0), Some(733.0), 864.0).sms(142);
/// H100 SXM5 (80 GB HBM3).
pub const H100_SXM: DeviceSpec = spec(
    "H100 SXM",
    67.0,
    Some(494.7),
    Some(989.4),
    Some(1978.9),
    3350.0,
)
.sms(132);
/// H100 PCIe.
pub const H100_PCIE: DeviceSpec = spec(
    "H100 PCIe",
    51.0,
    Some(378.0),
    Some(756.0),
    Some(1513.0),
    2000.0,
)
.sms(114);
/// H100 NVL.
pub const H100_NVL: DeviceSpec = spec(
    "H100 NVL",
    60.0,
    Some(417.5),
    Some(835.0),
    Some(1670.0),
    3900.0,
)
.sms(132);
/// H200 SXM.
pub const H200: DeviceSpec = spec("H200", 67.0, Some(494.7), Some(989.4), Some(1978.9), 4800.0)
    .with(Some(67.0), None)
    .sms(132);
/// B200 (HGX). NVIDIA HGX B200 datasheet (nvidia.com/en-us/data-center/hgx, per GPU, dense:
/// FP4 9 PF, FP8 4.5 PF, FP16/BF16 2.25 PF, TF32 1.1 PF, FP64 37 TF).
pub const B200: DeviceSpec = spec(
    "B200",
    75.0,
    Some(1100.0),
    Some(2250.0),
    Some(4500.0),
    7700.0,
)
.with(Some(37.0), Some(9000.0))
.sms(148);
/// Jetson AGX Orin (32/64 GB).
pub const ORIN_AGX: DeviceSpec =
    spec("Jetson AGX Orin", 5.3, Some(21.2), Some(42.5), None, 204.8).sms(16);
/// Jetson Orin NX 16 GB.
pub const ORIN_NX: DeviceSpec =
    spec("Jetson Orin NX", 1.9, Some(7.5), Some(15.0), None, 102.4).sms(8);
/// Jetson Orin Nano 8 GB.
pub const ORIN_NANO: DeviceSpec =
    spec("Jetson Orin Nano", 1.28, Some(5.0), Some(10.0), None, 68.0).sms(8);
/// MI100.
pub const MI100: DeviceSpec = spec("MI100", 23.1, Some(46.1), Some(184.6), None, 1228.8).sms(120);
/// MI210.
pub const MI210: DeviceSpec = spec("MI210", 22.6, Some(45.3), Some(181.0), None, 1638.4).sms(104);
/// MI250.
pub const MI250: DeviceSpec = spec("MI250", 45.3, Some(90.5), Some(362.1), None, 3276.8).sms(208);
/// MI250X.
pub const MI250X: DeviceSpec = spec("MI250X", 47.9, Some(95.7), Some(383.0), None, 3276.8).sms(220);
/// MI300X.
pub const MI300X: DeviceSpec = spec(
    "MI300X",
    81.7,
    Some(653.7),
    Some(1307.4),
    Some(2614.9),
    5300.0,
)
.with(Some(163.4), None)
.sms(304);
/// MI325X.
pub const MI325X: DeviceSpec = spec(
    "MI325X",
    81.7,
    Some(653.7),
    Some(1307.4),
    Some(2614.9),
    6000.0,
)
.with(Some(163.4), None)
.sms(304);

// ---- 2025-2026 parts. Per GPU, dense (the datasheets' sparse figures halved). ----

/// B300 (HGX, Blackwell Ultra). NVIDIA HGX B300 datasheet
/// (nvidia.com/en-us/data-center/hgx): 8 GPUs 108 PF dense FP4, 72 PF FP8 and 36 PF FP16
/// (sparse) → per GPU 13.5 PF FP4, 4.5 PF FP8, 2.25 PF BF16, 1.125 PF TF32; FP32 75 TF, FP64
/// 1.25 TF; 8 TB/s HBM3e.
pub const B300: DeviceSpec = spec(
    "B300",
    75.0,
    Some(1125.0),
    Some(2250.0),
    Some(4500.0),
    8000.0,
)
.with(Some(1.25), Some(13500.0));
/// GB200 (one Blackwell GPU of a GB200 superchip). NVIDIA GB200 NVL72 datasheet
/// (nvidia.com/en-us/data-center/gb200-nvl72), rack figures ÷ 72: FP4 10 PF, FP8 5 PF,
/// FP16/BF16 2.5 PF, TF32 1.25 PF (dense), FP32 80 TF, FP64 45 TF, 8 TB/s (576 TB/s ÷ 72).
pub const GB200: DeviceSpec = spec(
    "GB200",
    80.0,
    Some(1250.0),
    Some(2500.0),
    Some(5000.0),
    8000.0,
)
.with(Some(45.0), Some(10000.0));
/// GB300 (one Blackwell Ultra GPU of a GB300 superchip). NVIDIA GB300 NVL72 datasheet
/// (nvidia.com/en-us/data-center/gb300-nvl72), rack figures ÷ 72: FP4 1,080 PF dense → 15 PF,
/// FP8 5 PF, FP16/BF16 2.5 PF, TF32 1.25 PF, FP32 80 TF, FP64 100 TF ÷ 72 ≈ 1.39 TF;
/// 576 TB/s ÷ 72 = 8 TB/s.
pub const GB300: DeviceSpec = spec(
    "GB300",
    80.0,
    Some(1250.0),
    Some(2500.0),
    Some(5000.0),
    8000.0,
)
.with(Some(1.39), Some(15000.0));
/// GB10 (DGX Spark). NVIDIA DGX Spark datasheet (nvidia.com/en-us/products/workstations/dgx-spark):
/// 1 PF FP4 sparse → 500 TF dense; FP8/FP16/TF32 derived by halving per step (approximate),
/// FP32 31 TF; 273 GB/s LPDDR5x.
pub const GB10: DeviceSpec = spec("GB10", 31.0, Some(62.5), Some(125.0), Some(250.0), 273.0)
    .with(None, Some(500.0))
    .sms(48);
/// GeForce RTX 5090. NVIDIA RTX Blackwell GPU architecture whitepaper (appendix): FP32 104.8 TF;
/// tensor figures with FP32 accumulate (PyTorch's GEMMs): FP16/BF16 209.5, FP8 419, FP4 1,676
/// (dense), TF32 104.8; FP64 1/64 rate 1.6 TF; 1,792 GB/s GDDR7.
pub const RTX_5090: DeviceSpec = spec(
    "RTX 5090",
    104.8,
    Some(104.8),
    Some(209.5),
    Some(419.0),
    1792.0,
)
.with(Some(1.6), Some(1676.0))
.sms(170);
/// GeForce RTX 5080. Same whitepaper: FP32 56.3 TF; FP32-accumulate tensor FP16 112.6, FP8
/// 225.1, FP4 900.4 (1,801 AI TOPS sparse ÷ 2), TF32 56.3; 960 GB/s.
pub const RTX_5080: DeviceSpec = spec(
    "RTX 5080",
    56.3,
    Some(56.3),
    Some(112.6),
    Some(225.1),
    960.0,
)
.with(Some(0.88), Some(900.4))
.sms(84);
/// GeForce RTX 5070 Ti. Same whitepaper: FP32 43.9 TF; FP32-accumulate tensor FP16 87.9, FP8
/// 175.8, FP4 703 (1,406 AI TOPS sparse ÷ 2), TF32 43.9; 896 GB/s.
pub const RTX_5070_TI: DeviceSpec = spec(
    "RTX 5070 Ti",
    43.9,
    Some(43.9),
    Some(87.9),
    Some(175.8),
    896.0,
)
.with(Some(0.69), Some(703.0))
.sms(70);
/// RTX PRO 6000 Blackwell (Workstation/Server Edition). NVIDIA RTX PRO 6000 Blackwell
/// datasheet (nvidia.com/en-us/products/workstations/professional-desktop-gpus/rtx-pro-6000):
/// FP32 125 TF, 4,000 AI TOPS (FP4 sparse) → FP4 2,000, FP8 1,000, FP16 500, TF32 250 dense
/// (professional boards accumulate in FP32 at full rate); 1,792 GB/s.
pub const RTX_PRO_6000: DeviceSpec = spec(
    "RTX PRO 6000 Blackwell",
    125.0,
    Some(250.0),
    Some(500.0),
    Some(1000.0),
    1792.0,
)
.with(Some(1.97), Some(2000.0))
.sms(188);
/// H20 (China Hopper). NVIDIA H20 product brief: FP64 1 TF, FP32 44 TF, TF32 74 TF, FP16/BF16
/// 148 TF, FP8 296 TF (dense), 4.0 TB/s HBM3.
pub const H20: DeviceSpec = spec("H20", 44.0, Some(74.0), Some(148.0), Some(296.0), 4000.0)
    .with(Some(1.0), None)
    .sms(78);
/// L20 (China Ada). NVIDIA L20 product brief: FP32 59.8 TF, TF32 59.8, FP16/BF16 119.5, FP8
/// 239 TF (dense), 864 GB/s GDDR6.
pub const L20: DeviceSpec = spec("L20", 59.8, Some(59.8), Some(119.5), Some(239.0), 864.0).sms(92);
/// H200 NVL (PCIe). NVIDIA H200 datasheet (nvidia.com/en-us/data-center/h200), NVL column:
/// FP64 30 TF, FP32 60 TF, TF32 835 / BF16 1,671 / FP8 3,341 TF sparse → 417.5 / 835.5 /
/// 1,670.5 dense; 4.8 TB/s.
pub const H200_NVL: DeviceSpec = spec(
    "H200 NVL",
    60.0,
    Some(417.5),
    Some(835.5),
    Some(1670.5),
    4800.0,
)
.with(Some(30.0), None)
.sms(132);
/// MI300A (APU). AMD Instinct MI300A data sheet (amd.com/en/products/accelerators/instinct/mi300/mi300a):
/// FP64 vector 61.3 / matrix 122.6 TF, FP32 vector 122.6 TF (packed; the table's FP32 is the
/// unpacked 61.3, as for MI300X), TF32 490.3, FP16/BF16 980.6, FP8 1,961.2 TF (dense), 5.3 TB/s.
pub const MI300A: DeviceSpec = spec(
    "MI300A",
    61.3,
    Some(490.3),
    Some(980.6),
    Some(1961.2),
    5300.0,
)
.with(Some(122.6), None)
.sms(228);
/// MI355X. AMD Instinct MI355X data sheet (amd.com/en/products/accelerators/instinct/mi350/mi355x):
/// FP64 vector 78.6 TF, FP32 vector 157.3 TF (packed; the table keeps the unpacked 78.6),
/// FP16/BF16 2,516.6, FP8 5,033.2, MXFP4 10,066.3 TF (dense); no TF32/XF32 matrix type;
/// 8 TB/s HBM3e.
pub const MI355X: DeviceSpec = spec("MI355X", 78.6, None, Some(2516.6), Some(5033.2), 8000.0)
    .with(Some(78.6), Some(10066.3))
    .sms(256);
/// Jetson AGX Thor (T5000). NVIDIA Jetson Thor datasheet
/// (nvidia.com/en-us/autonomous-machines/embedded-systems/jetson-thor): 2,070 TF FP4 sparse →
/// 1,035 dense; FP8/FP16/TF32 halved per step (approximate); FP32 from 2,560 CUDA cores at
/// 1.57 GHz ≈ 8.0 TF; 273 GB/s LPDDR5X.
pub const THOR: DeviceSpec = spec(
    "Jetson Thor",
    8.0,
    Some(129.4),
    Some(258.8),
    Some(517.5),
    273.0,
)
.with(None, Some(1035.0))
.sms(20);

/// H800 SXM5 (China Hopper). NVIDIA H800 Tensor Core GPU datasheet: the H100 SXM's compute
/// (FP32 67, TF32 494.7, FP16/BF16 989.4, FP8 1,978.9 TF dense) with FP64 cut to 1 TF and
/// NVLink to 400 GB/s; 3.35 TB/s HBM3; 132 SMs.
pub const H800_SXM: DeviceSpec = spec(
    "H800 SXM",
    67.0,
    Some(494.7),
    Some(989.4),
    Some(1978.9),
    3350.0,
)
.with(Some(1.0), None)
.sms(132);
/// H800 PCIe. NVIDIA H800 PCIe datasheet: the H100 PCIe's compute (FP32 51, TF32 378, FP16
/// 756, FP8 1,513 TF dense), 2.0 TB/s HBM2e, 114 SMs.
pub const H800_PCIE: DeviceSpec = spec(
    "H800 PCIe",
    51.0,
    Some(378.0),
    Some(756.0),
    Some(1513.0),
    2000.0,
)
.sms(114);
/// A800 80 GB SXM4 (China Ampere). NVIDIA A800 datasheet: the A100's compute (FP32 19.5,
/// TF32 156, FP16/BF16 312 TF dense) with NVLink at 400 GB/s; 2,039 GB/s; 108 SMs.
pub const A800_80_SXM: DeviceSpec = spec(
    "A800 80GB SXM",
    19.5,
    Some(156.0),
    Some(312.0),
    None,
    2039.0,
)
.sms(108);
/// A800 80 GB PCIe. Same datasheet, PCIe column: 1,935 GB/s.
pub const A800_80_PCIE: DeviceSpec = spec(
    "A800 80GB PCIe",
    19.5,
    Some(156.0),
    Some(312.0),
    None,
    1935.0,
)
.sms(108);
/// A800 40 GB PCIe. Same datasheet: 1,555 GB/s.
pub const A800_40_PCIE: DeviceSpec = spec(
    "A800 40GB PCIe",
    19.5,
    Some(156.0),
    Some(312.0),
    None,
    1555.0,
)
.sms(108);
/// GeForce RTX 4090 (desktop, 128 SMs). NVIDIA Ada Lovelace GPU architecture whitepaper
/// (appendix): FP32 82.6 TF; tensor figures with FP32 accumulate: FP16/BF16 165.2, FP8 330.3
/// (dense), TF32 82.6 (no faster than FP32); 1,008 GB/s GDDR6X. The laptop RTX 4090 (76 SMs)
/// is another board ([`lookup`]).
pub const RTX_4090: DeviceSpec = spec(
    "RTX 4090",
    82.6,
    Some(82.6),
    Some(165.2),
    Some(330.3),
    1008.0,
)
.with(Some(1.29), None)
.sms(128);
/// One graphics compute die of an MI250X (110 CUs), which ROCm shows as a device of its own:
/// half the package figures of AMD's MI250X data sheet (FP32 47.9 → 23.9, FP32 matrix 95.7 →
/// 47.9, FP16/BF16 383 → 191.5 TF; 3.2768 TB/s → 1.6384 TB/s).
pub const MI250X_GCD: DeviceSpec = spec(
    "MI250X (one GCD)",
    23.9,
    Some(47.9),
    Some(191.5),
    None,
    1638.4,
)
.sms(110);
/// One graphics compute die of an MI250 (104 CUs): half of the MI250 data sheet's figures.
pub const MI250_GCD: DeviceSpec = spec(
    "MI250 (one GCD)",
    22.6,
    Some(45.3),
    Some(181.0),
    None,
    1638.4,
)
.sms(104);

const GIB: u64 = 1 << 30;

/// Spec of a device from its name (case-insensitive), using the memory size to pick a board
/// when the name does not; AMD devices without a name are recognised by CU count and memory
/// (304 CUs: MI300X with 192 GB, MI325X with 256 GB). The row must be the board in the trace:
/// when the trace reports an SM / CU count other than the row's, the device is another part
/// of that name (a laptop or Max-Q GeForce, a cut-down board, one die of an MI250/MI250X, seen
/// as a device of its own) and gets the row of that part if the table has one, else none
/// ([`missing_peak_notes`] says why).
pub fn lookup(d: &Device) -> Option<&'static DeviceSpec> {
    let s = by_name(d)?;
    match d.sm_count {
        Some(n) if n > 0 && s.sms != 0 && n != s.sms => {
            // one graphics compute die of a two-die MI250/MI250X
            let gcd: &'static DeviceSpec = match s.name {
                "MI250X" => &MI250X_GCD,
                "MI250" => &MI250_GCD,
                _ => return None,
            };
            (gcd.sms == n).then_some(gcd)
        }
        _ => Some(s),
    }
}

/// The row of a device's name, whatever its SM count ([`lookup`] checks it).
fn by_name(d: &Device) -> Option<&'static DeviceSpec> {
    let n = d.name.to_ascii_uppercase();
    let tokens: Vec<&str> = n
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .collect();
    let mem = d.memory_bytes.unwrap_or(0);
    let tok = |s: &str| tokens.contains(&s);
    let tok_prefix = |s: &str| tokens.iter().any(|t| t.starts_with(s));
    let s: &'static DeviceSpec = if tok("V100S") {
        &V100S
    } else if tok("V100") {
        if tok("PCIE") {
            &V100_PCIE
        } else {
            &V100_SXM2
        }
    } else if tok("A800") {
        if tok("80GB") || mem > 48 * GIB {
            if tok("PCIE") {
                &A800_80_PCIE
            } else {
                &A800_80_SXM
            }
        } else {
            &A800_40_PCIE
        }
    } else if tok("H800") {
        if tok("PCIE") {
            &H800_PCIE
        } else {
            &H800_SXM
        }
    } else if tok("4090") && tok("RTX") {
        &RTX_4090
    } else if tok("A100") {
        if tok("80GB") || mem > 48 * GIB {
            if tok("PCIE") {
                &A100_80_PCIE
            } else {
                &A100_80_SXM
            }
        } else {
            &A100_40
        }
    } else if tok("A10G") {
        &A10G
    } else if tok("A10") {
        &A10
    } else if tok("A30") {
        &A30
    } else if tok("A40") {
        &A40
    } else if tok("L20") {
        &L20
    } else if tok("L40S") {
        &L40S
    } else if tok("L4") {
        &L4
    } else if tok("T4") {
        &T4
    } else if tok("H100") {
        if tok("PCIE") {
            &H100_PCIE
        } else if tok("NVL") {
            &H100_NVL
        } else {
            &H100_SXM
        }
    } else if tok("H200") {
        if tok("NVL") {
            &H200_NVL
        } else {
            &H200
        }
    } else if tok("H20") {
        &H20
    } else if tok("B200") {
        &B200
    } else if tok("B300") {
        &B300
    } else if tok("GB200") {
        &GB200
    } else if tok("GB300") {
        &GB300
    } else if tok("GB10") {
        &GB10
    } else if tok("5090") {
        &RTX_5090
    } else if tok("5080") {
        &RTX_5080
    } else if tok("5070") && tok("TI") {
        &RTX_5070_TI
    } else if tok("PRO") && tok("6000") && tok("BLACKWELL") {
        &RTX_PRO_6000
    } else if tok("THOR") {
        &THOR
    } else if tok("ORIN") {
        if mem > 20 * GIB {
            &ORIN_AGX
        } else if mem > 10 * GIB {
            &ORIN_NX
        } else {
            &ORIN_NANO
        }
    } else if tok_prefix("MI355") {
        &MI355X
    } else if tok("MI300A") {
        &MI300A
    } else if tok_prefix("MI325") {
        &MI325X
    } else if tok_prefix("MI300") {
        &MI300X
    } else if tok("MI250X") {
        &MI250X
    } else if tok("MI250") {
        &MI250
    } else if tok("MI210") {
        &MI210
    } else if tok("MI100") {
        &MI100
    } else if tokens.is_empty() && d.sm_count == Some(304) && d.warp_size == Some(64) {
        if mem > 224 * GIB {
            &MI325X
        } else {
            &MI300X
        }
    } else {
        return None;
    };
    Some(s)
}

/// One note per active device that the peak table does not know: "no peak table for X", why
/// when the name matches a row of another board (SM count), and which analyses were skipped.
pub fn missing_peak_notes(devices: &[Device]) -> Vec<String> {
    devices
        .iter()
        .filter(|d| d.active && lookup(d).is_none())
        .map(|d| {
            let name = if d.name.is_empty() {
                format!("GPU {} (unnamed)", d.id)
            } else {
                format!("{} (GPU {})", d.name, d.id)
            };
            let why = match (by_name(d), d.sm_count) {
                (Some(s), Some(n)) => format!(
                    " (it reports {n} SMs, the table's {} has {}: another board of that name, \
                     such as a laptop, Max-Q or cut-down part, whose peaks differ)",
                    s.name, s.sms
                ),
                _ => String::new(),
            };
            format!(
                "no peak table for {name}{why}: the roofline rules (memory-bound/compute-bound) \
                 and the peak-based bounds (fp32-matmul's tensor-core gain, MFU) were skipped \
                 for it"
            )
        })
        .collect()
}

/// Whether a device has tensor / matrix cores: from the table, else NVIDIA compute capability
/// ≥ 7.0 (Volta and later, except 7.5-class GeForce GTX 16xx which the name rules out), else
/// unknown.
pub fn has_tensor_cores(d: &Device) -> Option<bool> {
    if let Some(s) = lookup(d) {
        return Some(s.has_tensor_cores());
    }
    match (d.vendor, d.compute_major) {
        (Vendor::Nvidia, Some(m)) if !d.name.contains("GTX 16") => Some(m >= 7),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(name: &str, mem_gib: u64) -> Device {
        Device {
            name: name.into(),
            memory_bytes: Some(mem_gib * GIB),
            ..Device::default()
        }
    }

    #[test]
    fn names_from_real_traces() {
        assert_eq!(
            lookup(&dev("Tesla V100-DGXS-32GB", 32)).unwrap().name,
            "V100 SXM2"
        );
        assert_eq!(
            lookup(&dev("Tesla V100-SXM2-32GB", 32)).unwrap().name,
            "V100 SXM2"
        );
        assert_eq!(
            lookup(&dev("Tesla V100-PCIE-16GB", 16)).unwrap().name,
            "V100 PCIe"
        );
        assert_eq!(lookup(&dev("Tesla T4", 15)).unwrap().name, "T4");
        assert_eq!(lookup(&dev("NVIDIA A10G", 22)).unwrap().name, "A10G");
        assert_eq!(lookup(&dev("NVIDIA A10", 22)).unwrap().name, "A10");
        assert_eq!(
            lookup(&dev("NVIDIA A100-SXM4-80GB", 80)).unwrap().name,
            "A100 80GB SXM"
        );
        assert_eq!(
            lookup(&dev("NVIDIA A100-PG509-200", 40)).unwrap().name,
            "A100 40GB"
        );
        assert_eq!(
            lookup(&dev("NVIDIA A100 80GB PCIe", 80)).unwrap().name,
            "A100 80GB PCIe"
        );
        assert_eq!(lookup(&dev("NVIDIA L4", 22)).unwrap().name, "L4");
        assert_eq!(lookup(&dev("NVIDIA L40S", 45)).unwrap().name, "L40S");
        assert_eq!(
            lookup(&dev("NVIDIA H100 80GB HBM3", 80)).unwrap().name,
            "H100 SXM"
        );
        assert_eq!(
            lookup(&dev("NVIDIA H100 PCIe", 80)).unwrap().name,
            "H100 PCIe"
        );
        assert_eq!(lookup(&dev("NVIDIA H200", 141)).unwrap().name, "H200");
        assert_eq!(lookup(&dev("NVIDIA B200", 180)).unwrap().name, "B200");
        assert_eq!(lookup(&dev("Orin", 7)).unwrap().name, "Jetson Orin Nano");
        assert_eq!(lookup(&dev("Orin", 61)).unwrap().name, "Jetson AGX Orin");
        assert_eq!(
            lookup(&dev("AMD Instinct MI250X", 64)).unwrap().name,
            "MI250X"
        );
        assert_eq!(
            lookup(&dev("AMD Instinct MI300X", 192)).unwrap().name,
            "MI300X"
        );
        assert_eq!(
            lookup(&dev("AMD Instinct MI325X", 256)).unwrap().name,
            "MI325X"
        );
        assert_eq!(
            lookup(&dev("AMD Instinct MI210", 64)).unwrap().name,
            "MI210"
        );
        assert!(lookup(&dev("NVIDIA GeForce GTX 1080", 8)).is_none());
        assert!(lookup(&dev("NVIDIA RTX A4000", 16)).is_none());
        assert_eq!(
            lookup(&dev("NVIDIA GeForce RTX 4090", 24)).unwrap().name,
            "RTX 4090"
        );
        assert!(lookup(&dev("NVIDIA RTX 6000 Ada Generation", 48)).is_none());
        assert!(lookup(&dev("", 192)).is_none());
    }

    /// The 2025-2026 parts under the names `nvidia-smi` / `hipGetDeviceProperties` give.
    #[test]
    fn current_parts() {
        let cases = [
            ("NVIDIA B200", "B200"),
            ("NVIDIA B300 SXM6 AC", "B300"),
            ("NVIDIA GB200", "GB200"),
            ("NVIDIA GB300", "GB300"),
            ("NVIDIA GB10", "GB10"),
            ("NVIDIA GeForce RTX 5090", "RTX 5090"),
            ("NVIDIA GeForce RTX 5080", "RTX 5080"),
            ("NVIDIA GeForce RTX 5070 Ti", "RTX 5070 Ti"),
            (
                "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                "RTX PRO 6000 Blackwell",
            ),
            (
                "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
                "RTX PRO 6000 Blackwell",
            ),
            ("NVIDIA H20", "H20"),
            ("NVIDIA L20", "L20"),
            ("NVIDIA H200 NVL", "H200 NVL"),
            ("NVIDIA H200", "H200"),
            ("AMD Instinct MI300A", "MI300A"),
            ("AMD Instinct MI300X", "MI300X"),
            ("AMD Instinct MI325X", "MI325X"),
            ("AMD Instinct MI355X", "MI355X"),
            ("NVIDIA Thor", "Jetson Thor"),
        ];
        for (name, want) in cases {
            let s = lookup(&dev(name, 96)).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(s.name, want, "{name}");
        }
        // the rows a reviewer checks against the datasheets
        assert_eq!(B300.fp4, Some(13500.0));
        assert_eq!(B300.fp64, Some(1.25));
        assert_eq!(GB300.fp4, Some(15000.0));
        assert_eq!(B200.fp64, Some(37.0));
        assert_eq!(H20.fp16, Some(148.0));
        assert_eq!(MI355X.tf32, None);
        assert_eq!(MI355X.fp4, Some(10066.3));
        // every dense peak rises with lower precision
        for s in [
            B200,
            B300,
            GB200,
            GB300,
            GB10,
            RTX_5090,
            RTX_5080,
            RTX_5070_TI,
            RTX_PRO_6000,
            H20,
            L20,
            H200_NVL,
            MI300A,
            MI325X,
            MI355X,
            THOR,
        ] {
            let mut last = s.fp64.unwrap_or(0.0).min(s.fp32);
            for p in [Some(s.fp32), s.tf32, s.fp16, s.fp8, s.fp4]
                .into_iter()
                .flatten()
            {
                assert!(p >= last, "{}: {p} < {last}", s.name);
                last = p;
            }
            assert!(s.mem_bw > 0.0, "{}", s.name);
        }
    }

    /// The row is the board in the trace: a part of the same name with another SM count
    /// (laptop, Max-Q, one die of an MI250X) is not the desktop or package row.
    #[test]
    fn rows_match_the_board() {
        let with_sms = |name: &str, mem: u64, sms: u32| {
            let mut d = dev(name, mem);
            d.sm_count = Some(sms);
            d
        };
        let desk = with_sms("NVIDIA GeForce RTX 4090", 24, 128);
        assert_eq!(lookup(&desk).unwrap().name, "RTX 4090");
        let laptop = with_sms("NVIDIA GeForce RTX 4090 Laptop GPU", 16, 76);
        assert!(lookup(&laptop).is_none());
        let mut l = laptop.clone();
        l.active = true;
        let notes = missing_peak_notes(&[l]);
        assert!(
            notes[0].contains("76 SMs, the table's RTX 4090 has 128"),
            "{notes:?}"
        );
        let laptop5090 = with_sms("NVIDIA GeForce RTX 5090 Laptop GPU", 24, 82);
        assert!(lookup(&laptop5090).is_none());
        // the SM count is checked only when the trace gives one
        assert_eq!(
            lookup(&dev("NVIDIA GeForce RTX 5090", 32)).unwrap().name,
            "RTX 5090"
        );
        // one die of an MI250X: half the package
        let gcd = with_sms("AMD Instinct MI250X", 64, 110);
        let s = lookup(&gcd).unwrap();
        assert_eq!(s.name, "MI250X (one GCD)");
        assert_eq!(s.fp16, Some(191.5));
        assert_eq!(
            lookup(&with_sms("AMD Instinct MI250X", 128, 220))
                .unwrap()
                .name,
            "MI250X"
        );
        // Jetson AGX Orin 32 GB has 14 SMs, not the 64 GB module's 16
        assert!(lookup(&with_sms("Orin", 30, 14)).is_none());
        assert_eq!(
            lookup(&with_sms("Orin", 61, 16)).unwrap().name,
            "Jetson AGX Orin"
        );
        // China parts
        assert_eq!(
            lookup(&with_sms("NVIDIA H800", 80, 132)).unwrap().name,
            "H800 SXM"
        );
        assert_eq!(
            lookup(&with_sms("NVIDIA H800 PCIe", 80, 114)).unwrap().name,
            "H800 PCIe"
        );
        assert_eq!(
            lookup(&with_sms("NVIDIA A800-SXM4-80GB", 80, 108))
                .unwrap()
                .name,
            "A800 80GB SXM"
        );
        assert_eq!(lookup(&with_sms("NVIDIA H20", 96, 78)).unwrap().name, "H20");
        assert_eq!(lookup(&with_sms("NVIDIA L20", 48, 92)).unwrap().name, "L20");
        // every corpus device with a row keeps it (SM counts from their deviceProperties)
        for (name, mem, sms, want) in [
            ("NVIDIA H100 80GB HBM3", 80, 132, "H100 SXM"),
            ("NVIDIA B200", 178, 148, "B200"),
            ("NVIDIA A100-SXM4-80GB", 80, 108, "A100 80GB SXM"),
            ("NVIDIA A100-PG509-200", 40, 108, "A100 40GB"),
            ("Tesla V100-DGXS-32GB", 32, 80, "V100 SXM2"),
            ("AMD Instinct MI300X VF", 192, 304, "MI300X"),
            ("AMD Instinct MI210", 64, 104, "MI210"),
        ] {
            assert_eq!(lookup(&with_sms(name, mem, sms)).unwrap().name, want);
        }
    }

    /// TF32 is advised only where it is faster than FP32; the fp32-matmul target is the
    /// BF16/FP16 tensor peak at FP32 accumulate.
    #[test]
    fn fp32_matmul_targets() {
        assert_eq!(A100_80_SXM.tf32_faster(), Some(156.0));
        assert_eq!(A100_80_SXM.fp32_matmul_target(), Some(312.0));
        for s in [RTX_4090, RTX_5090, RTX_5080, L20] {
            assert_eq!(s.tf32_faster(), None, "{}", s.name);
            assert_eq!(s.fp32_matmul_target(), s.fp16, "{}", s.name);
        }
        assert_eq!(MI355X.fp32_matmul_target(), Some(2516.6));
    }

    #[test]
    fn unknown_devices_get_a_note() {
        let mut known = dev("NVIDIA H100 80GB HBM3", 80);
        known.active = true;
        let mut unknown = dev("NVIDIA GeForce RTX 4080", 16);
        unknown.active = true;
        unknown.id = 1;
        let mut idle = dev("NVIDIA GeForce GTX 1080", 8);
        idle.id = 2;
        let notes = missing_peak_notes(&[known, unknown, idle]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("no peak table for NVIDIA GeForce RTX 4080 (GPU 1)"));
        assert!(notes[0].contains("skipped"));
    }

    #[test]
    fn unnamed_mi300_by_shape() {
        let mut d = dev("", 192);
        d.sm_count = Some(304);
        d.warp_size = Some(64);
        assert_eq!(lookup(&d).unwrap().name, "MI300X");
        d.memory_bytes = Some(256 * GIB);
        assert_eq!(lookup(&d).unwrap().name, "MI325X");
    }

    #[test]
    fn tensor_cores() {
        assert_eq!(
            has_tensor_cores(&dev("Tesla V100-SXM2-32GB", 32)),
            Some(true)
        );
        let mut d = dev("NVIDIA GeForce GTX 1080", 8);
        d.vendor = Vendor::Nvidia;
        d.compute_major = Some(6);
        assert_eq!(has_tensor_cores(&d), Some(false));
        d.compute_major = Some(8);
        d.name = "NVIDIA RTX A6000".into();
        assert_eq!(has_tensor_cores(&d), Some(true));
        assert_eq!(has_tensor_cores(&Device::default()), None);
        // every table entry has a positive bandwidth and FP32 peak
        for s in [
            V100_SXM2,
            V100_PCIE,
            V100S,
            T4,
            A10,
            A10G,
            A100_40,
            A100_80_SXM,
            A100_80_PCIE,
            A30,
            A40,
            L4,
            L40S,
            H100_SXM,
            H100_PCIE,
            H100_NVL,
            H200,
            B200,
            ORIN_AGX,
            ORIN_NX,
            ORIN_NANO,
            MI100,
            MI210,
            MI250,
            MI250X,
            MI300X,
            MI325X,
        ] {
            assert!(s.fp32 > 0.0 && s.mem_bw > 0.0, "{}", s.name);
            assert!(s.tensor_peak_for_fp32().unwrap() >= s.fp32, "{}", s.name);
        }
    }
}
