//! Peak throughput and memory bandwidth of common accelerators, keyed by the device name the
//! trace gives (`deviceProperties.name`), for the roofline and the tensor-core rules.
//!
//! Figures are the vendors' published **dense** peaks (no structured sparsity) at boost clock:
//! FP32 on the regular (non-tensor) pipes, TF32 / FP16-BF16 / FP8 on tensor (NVIDIA) or matrix
//! (AMD) cores, and DRAM bandwidth. They are upper bounds no kernel reaches; achieved shares are
//! computed against them. Where a part comes in several boards (A100 40/80 GB, H100 SXM/PCIe),
//! the name and, failing that, the memory size pick the board. Jetson figures are derived from
//! NVIDIA's sparse INT8 TOPS (÷ 4 for dense FP16) and are approximate. A device that is not in
//! the table gets no roofline (and the tensor-core rules fall back to the compute capability).

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
    }
}

/// V100 SXM2 (also DGX Station V100).
pub const V100_SXM2: DeviceSpec = spec("V100 SXM2", 15.7, None, Some(125.0), None, 900.0);
/// V100 PCIe.
pub const V100_PCIE: DeviceSpec = spec("V100 PCIe", 14.0, None, Some(112.0), None, 900.0);
/// V100S PCIe.
pub const V100S: DeviceSpec = spec("V100S PCIe", 16.4, None, Some(130.0), None, 1134.0);
/// T4.
pub const T4: DeviceSpec = spec("T4", 8.1, None, Some(65.0), None, 320.0);
/// A10.
pub const A10: DeviceSpec = spec("A10", 31.2, Some(62.5), Some(125.0), None, 600.0);
/// A10G (AWS variant: more FP32, half the tensor throughput of the A10).
pub const A10G: DeviceSpec = spec("A10G", 35.0, Some(35.0), Some(70.0), None, 600.0);
/// A100 40 GB (SXM4 and PCIe).
pub const A100_40: DeviceSpec = spec("A100 40GB", 19.5, Some(156.0), Some(312.0), None, 1555.0);
/// A100 80 GB SXM4.
pub const A100_80_SXM: DeviceSpec = spec(
    "A100 80GB SXM",
    19.5,
    Some(156.0),
    Some(312.0),
    None,
    2039.0,
);
/// A100 80 GB PCIe.
pub const A100_80_PCIE: DeviceSpec = spec(
    "A100 80GB PCIe",
    19.5,
    Some(156.0),
    Some(312.0),
    None,
    1935.0,
);
/// A30.
pub const A30: DeviceSpec = spec("A30", 10.3, Some(82.0), Some(165.0), None, 933.0);
/// A40.
pub const A40: DeviceSpec = spec("A40", 37.4, Some(74.8), Some(149.7), None, 696.0);
/// L4.
pub const L4: DeviceSpec = spec("L4", 30.3, Some(60.0), Some(121.0), Some(242.5), 300.0);
/// L40S.
pub const L40S: DeviceSpec = spec("L40S", 91.6, Some(183.0), Some(362.0), Some(733.0), 864.0);
/// H100 SXM5 (80 GB HBM3).
pub const H100_SXM: DeviceSpec = spec(
    "H100 SXM",
    67.0,
    Some(494.7),
    Some(989.4),
    Some(1978.9),
    3350.0,
);
/// H100 PCIe.
pub const H100_PCIE: DeviceSpec = spec(
    "H100 PCIe",
    51.0,
    Some(378.0),
    Some(756.0),
    Some(1513.0),
    2000.0,
);
/// H100 NVL.
pub const H100_NVL: DeviceSpec = spec(
    "H100 NVL",
    60.0,
    Some(417.5),
    Some(835.0),
    Some(1670.0),
    3900.0,
);
/// H200 SXM.
pub const H200: DeviceSpec = spec("H200", 67.0, Some(494.7), Some(989.4), Some(1978.9), 4800.0);
/// B200 (HGX).
pub const B200: DeviceSpec = spec(
    "B200",
    75.0,
    Some(1100.0),
    Some(2250.0),
    Some(4500.0),
    7700.0,
);
/// Jetson AGX Orin (32/64 GB).
pub const ORIN_AGX: DeviceSpec = spec("Jetson AGX Orin", 5.3, Some(21.2), Some(42.5), None, 204.8);
/// Jetson Orin NX 16 GB.
pub const ORIN_NX: DeviceSpec = spec("Jetson Orin NX", 1.9, Some(7.5), Some(15.0), None, 102.4);
/// Jetson Orin Nano 8 GB.
pub const ORIN_NANO: DeviceSpec = spec("Jetson Orin Nano", 1.28, Some(5.0), Some(10.0), None, 68.0);
/// MI100.
pub const MI100: DeviceSpec = spec("MI100", 23.1, Some(46.1), Some(184.6), None, 1228.8);
/// MI210.
pub const MI210: DeviceSpec = spec("MI210", 22.6, Some(45.3), Some(181.0), None, 1638.4);
/// MI250.
pub const MI250: DeviceSpec = spec("MI250", 45.3, Some(90.5), Some(362.1), None, 3276.8);
/// MI250X.
pub const MI250X: DeviceSpec = spec("MI250X", 47.9, Some(95.7), Some(383.0), None, 3276.8);
/// MI300X.
pub const MI300X: DeviceSpec = spec(
    "MI300X",
    81.7,
    Some(653.7),
    Some(1307.4),
    Some(2614.9),
    5300.0,
);
/// MI325X.
pub const MI325X: DeviceSpec = spec(
    "MI325X",
    81.7,
    Some(653.7),
    Some(1307.4),
    Some(2614.9),
    6000.0,
);

const GIB: u64 = 1 << 30;

/// Spec of a device from its name (case-insensitive), using the memory size to pick a board
/// when the name does not; AMD devices without a name are recognised by CU count and memory
/// (304 CUs: MI300X with 192 GB, MI325X with 256 GB).
pub fn lookup(d: &Device) -> Option<&'static DeviceSpec> {
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
        &H200
    } else if tok("B200") {
        &B200
    } else if tok("ORIN") {
        if mem > 20 * GIB {
            &ORIN_AGX
        } else if mem > 10 * GIB {
            &ORIN_NX
        } else {
            &ORIN_NANO
        }
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
        assert!(lookup(&dev("NVIDIA GeForce RTX 4090", 24)).is_none());
        assert!(lookup(&dev("", 192)).is_none());
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
