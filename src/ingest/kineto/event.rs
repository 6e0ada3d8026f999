//! Typed, borrowing, allocation-free deserialization of one Kineto event.
//!
//! Only the fields stallscope uses are decoded; everything else is skipped by serde's
//! `IgnoredAny`. Every field accepts any JSON type (a number written as a string, `null`, an
//! object where a number was expected) so that one odd value never loses the event. Times are
//! read from the raw number text straight into integer nanoseconds: an `f64` cannot hold
//! epoch microseconds with nanosecond digits.

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// A string that borrows from the input when it has no escapes.
#[derive(Debug, Default, Clone)]
pub struct BStr<'a>(pub Option<Cow<'a, str>>);

impl BStr<'_> {
    /// Sets the string to `None` in place. Only an owned string has anything to free: a
    /// borrowed one (nearly every string of a trace) is forgotten instead of going through the
    /// drop glue, which costs a call per field per event on the reader's hot path.
    #[inline]
    pub fn reset(&mut self) {
        if matches!(self.0, Some(Cow::Owned(_))) {
            self.0 = None;
        } else {
            std::mem::forget(self.0.take());
        }
    }
}

impl<'de> Deserialize<'de> for BStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(BStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(BStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(BStr(Some(Cow::Owned(v))))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(BStr(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(BStr(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(BStr(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(BStr(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(BStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(BStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(BStr(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A lenient number: integers exactly, floats, numeric strings; anything else is `None`.
/// (16 bytes: events carry a dozen of these.)
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub enum Num {
    /// Absent or not a number.
    #[default]
    None,
    /// An integer that fits in `i64`.
    Int(i64),
    /// An integer above `i64::MAX` that fits in `u64`.
    UInt(u64),
    /// An integer beyond the `u64`/`i64` range (a numeric string), as the nearest `f64`.
    Huge(f64),
    /// A fractional number.
    Float(f64),
}

impl Num {
    /// As a non-negative id (0 when absent or negative).
    pub fn id(self) -> u64 {
        match self {
            Num::Int(v) if v > 0 => v as u64,
            Num::UInt(v) => v,
            Num::Huge(v) if v > 0.0 => u64::MAX,
            Num::Float(v) if v > 0.0 => v as u64,
            _ => 0,
        }
    }
    /// As a signed integer.
    pub fn int(self) -> Option<i64> {
        match self {
            Num::Int(v) => Some(v),
            Num::Float(v) if v.is_finite() => Some(v as i64),
            _ => None,
        }
    }
    /// As a float.
    pub fn float(self) -> Option<f64> {
        match self {
            Num::Int(v) => Some(v as f64),
            Num::UInt(v) => Some(v as f64),
            Num::Huge(v) | Num::Float(v) => Some(v),
            Num::None => None,
        }
    }
    fn from_u64(v: u64) -> Num {
        match i64::try_from(v) {
            Ok(i) => Num::Int(i),
            Err(_) => Num::UInt(v),
        }
    }
}

fn num_from_str(v: &str) -> Num {
    let t = v.trim();
    if let Ok(i) = t.parse::<i128>() {
        if let Ok(x) = i64::try_from(i) {
            Num::Int(x)
        } else if let Ok(x) = u64::try_from(i) {
            Num::UInt(x)
        } else {
            Num::Huge(i as f64)
        }
    } else if let Ok(f) = t.parse::<f64>() {
        Num::Float(f)
    } else {
        Num::None
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num::from_u64(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num::Float(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Num, E> {
                Ok(num_from_str(v))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Num, E> {
                Ok(Num::None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Num, E> {
                Ok(Num::None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Num, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Num::None)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Num, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Num::None)
            }
        }
        d.deserialize_any(V)
    }
}

/// `[x, y, z]` without allocating; anything else gives zeros.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Dim3(pub [u32; 3]);

impl<'de> Deserialize<'de> for Dim3 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Dim3;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a 3-element array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Dim3, A::Error> {
                let mut out = [0u32; 3];
                let mut i = 0;
                while let Some(n) = s.next_element::<Num>()? {
                    if i < 3 {
                        out[i] = n.int().unwrap_or(0).clamp(0, u32::MAX as i64) as u32;
                    }
                    i += 1;
                }
                Ok(Dim3(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Dim3, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Dim3::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Dim3, E> {
                Ok(Dim3::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Dim3, E> {
                Ok(Dim3::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Dim3, E> {
                Ok(Dim3::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Dim3, E> {
                Ok(Dim3::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Dim3, E> {
                Ok(Dim3::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Dim3, E> {
                Ok(Dim3::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// The slots ([`RawArgs::slot_index`]) few events fill: graph ids, Python module ids, the
/// memory events', metadata names and labels, FLOPs, the collectives'. [`RawArgs::clear_hot`]
/// leaves them alone until one is filled through [`RawArgs::slot_noted`].
const COLD_SLOTS: u64 = 0b1_1111_1111_1100_0111_1111_0000_0000_0000;

/// [`RawArgs::cold_clean`]: bookkeeping of the parser, not a value of the event (prints as
/// `_`).
#[derive(Default, Clone, Copy)]
struct ColdClean(bool);

impl fmt::Debug for ColdClean {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("_")
    }
}

/// The `args` fields stallscope reads.
#[derive(Debug, Default, Clone)]
pub struct RawArgs<'a> {
    /// `args["External id"]`: links an operator, its launches and their kernels.
    pub external_id: Num,
    /// `args.correlation`: links a runtime launch and its device activity.
    pub correlation: Num,
    /// `args.device`: the device index of a device activity.
    pub device: Num,
    /// `args.stream`: the stream of a device activity.
    pub stream: Num,
    /// `args["blocks per SM"]`.
    pub blocks_per_sm: Num,
    /// `args["warps per SM"]`.
    pub warps_per_sm: Num,
    /// `args["est. achieved occupancy %"]`.
    pub occupancy: Num,
    /// `args["registers per thread"]`.
    pub registers: Num,
    /// `args["shared memory"]`, bytes.
    pub shared_memory: Num,
    /// `args.grid`: the launch grid.
    pub grid: Dim3,
    /// `args.block`: the thread block.
    pub block: Dim3,
    /// `args.bytes` of a copy or fill (or a memory event).
    pub bytes: Num,
    /// `args["graph id"]`: a CUDA graph replay.
    pub graph_id: Num,
    /// `args["Python module id"]` of a Python frame.
    pub python_module_id: Num,
    /// `args["Device Type"]` of a memory event.
    pub device_type: Num,
    /// `args["Device Id"]` of a memory event.
    pub device_id: Num,
    /// `args["Total Allocated"]` of a memory event, bytes.
    pub total_allocated: Num,
    /// `args.name` (metadata events).
    pub name: BStr<'a>,
    /// `args.labels` (process_labels metadata).
    pub labels: BStr<'a>,
    /// Raw JSON text of `Input Dims` (record_shapes).
    pub input_dims: Option<&'a str>,
    /// Raw JSON text of `Input type`.
    pub input_type: Option<&'a str>,
    /// Raw JSON text of `Concrete Inputs`.
    pub concrete_inputs: Option<&'a str>,
    /// `flops` (`with_flops=True`).
    pub flops: Num,
    /// `Addr` (memory events).
    pub addr: Num,
    /// `Bytes` (memory events; negative for a free).
    pub mem_bytes: Num,
    /// `Total Reserved` (memory events).
    pub total_reserved: Num,
    /// `Seq` of a collective (its number in its process group; GPU collective kernels since
    /// 2026, kineto #1296).
    pub seq: Num,
    /// `Comms Id` of a collective (one id for the same operation on every rank; may exceed
    /// the signed 64-bit range).
    pub comms_id: Num,
    /// `Process Group Name` of a collective (`record_param_comms` and its kernels).
    pub pg_name: BStr<'a>,
    /// `Process Group ID` of a collective (older `record_param_comms`).
    pub pg_id: Num,
    /// `In msg nelems` of a collective.
    pub in_nelems: Num,
    /// `Out msg nelems` of a collective.
    pub out_nelems: Num,
    /// `dtype` of a collective's message (`Float`, `BFloat16`, ...).
    pub dtype: BStr<'a>,
    /// Whether every slot of [`COLD_SLOTS`] holds its default, for [`RawArgs::clear_hot`]
    /// (false for a default or [`RawArgs::clear`]ed value: whoever fills it next may fill
    /// any slot).
    cold_clean: ColdClean,
}

/// Where the value of one `args` member goes, by the kind of value it is.
pub enum ArgSlot<'s, 'a> {
    /// A number.
    Num(&'s mut Num),
    /// A `[x, y, z]` array.
    Dim3(&'s mut Dim3),
    /// A string.
    Str(&'s mut BStr<'a>),
    /// Kept as raw JSON text.
    Raw(&'s mut Option<&'a str>),
}

impl<'a> RawArgs<'a> {
    /// Resets every field to its default in place: what `*self = RawArgs::default()` means,
    /// without building a default copy of the struct (about 550 bytes) and moving it in for
    /// each event. The destructuring names every field, so a new field fails to compile until
    /// it is reset here too; `clear_equals_default` in the tests checks the values.
    #[inline]
    pub fn clear(&mut self) {
        let RawArgs {
            external_id,
            correlation,
            device,
            stream,
            blocks_per_sm,
            warps_per_sm,
            occupancy,
            registers,
            shared_memory,
            grid,
            block,
            bytes,
            graph_id,
            python_module_id,
            device_type,
            device_id,
            total_allocated,
            name,
            labels,
            input_dims,
            input_type,
            concrete_inputs,
            flops,
            addr,
            mem_bytes,
            total_reserved,
            seq,
            comms_id,
            pg_name,
            pg_id,
            in_nelems,
            out_nelems,
            dtype,
            cold_clean,
        } = self;
        *cold_clean = ColdClean(false);
        *external_id = Num::None;
        *correlation = Num::None;
        *device = Num::None;
        *stream = Num::None;
        *blocks_per_sm = Num::None;
        *warps_per_sm = Num::None;
        *occupancy = Num::None;
        *registers = Num::None;
        *shared_memory = Num::None;
        *grid = Dim3([0; 3]);
        *block = Dim3([0; 3]);
        *bytes = Num::None;
        *graph_id = Num::None;
        *python_module_id = Num::None;
        *device_type = Num::None;
        *device_id = Num::None;
        *total_allocated = Num::None;
        name.reset();
        labels.reset();
        *input_dims = None;
        *input_type = None;
        *concrete_inputs = None;
        *flops = Num::None;
        *addr = Num::None;
        *mem_bytes = Num::None;
        *total_reserved = Num::None;
        *seq = Num::None;
        *comms_id = Num::None;
        pg_name.reset();
        *pg_id = Num::None;
        *in_nelems = Num::None;
        *out_nelems = Num::None;
        dtype.reset();
    }

    /// [`RawArgs::clear`] for a parser that fills the slots of [`COLD_SLOTS`] only through
    /// [`RawArgs::slot_noted`] until the next call: the cold slots are reset only when one
    /// may have been filled since (most events fill none: about half the writes of `clear`).
    /// Never inlined: left to rustc, whether it was inlined into the shaped parser moved
    /// with how the crate is split into codegen units, and the parser's own code was worse
    /// with it inlined (dfi-100M: 10-29 M instructions more).
    #[inline(never)]
    pub fn clear_hot(&mut self) {
        if !self.cold_clean.0 {
            self.clear_all();
            return;
        }
        self.external_id = Num::None;
        self.correlation = Num::None;
        self.device = Num::None;
        self.stream = Num::None;
        self.blocks_per_sm = Num::None;
        self.warps_per_sm = Num::None;
        self.occupancy = Num::None;
        self.registers = Num::None;
        self.shared_memory = Num::None;
        self.grid = Dim3([0; 3]);
        self.block = Dim3([0; 3]);
        self.bytes = Num::None;
        self.input_dims = None;
        self.input_type = None;
        self.concrete_inputs = None;
    }

    /// [`RawArgs::clear`] after a cold slot was filled, out of line ([`RawArgs::clear_hot`]).
    #[cold]
    #[inline(never)]
    fn clear_all(&mut self) {
        self.clear();
        self.cold_clean = ColdClean(true);
    }

    /// Whether every slot of [`COLD_SLOTS`] is known to hold its default: no slot of them was
    /// filled through [`RawArgs::slot_noted`] since a [`RawArgs::clear_hot`]. `false` tells
    /// nothing (a general parse, a default value): the slots must be read.
    #[inline]
    pub fn cold_default(&self) -> bool {
        self.cold_clean.0
    }

    /// The slot of index `i` ([`RawArgs::slot_at`]), noted for [`RawArgs::clear_hot`] when
    /// it is one of [`COLD_SLOTS`].
    #[inline]
    pub fn slot_noted(&mut self, i: u8) -> ArgSlot<'_, 'a> {
        if COLD_SLOTS >> i & 1 == 1 {
            self.cold_clean = ColdClean(false);
        }
        self.slot_at(i)
    }

    /// The field a member of `args` with key `k` fills, or `None` for members stallscope does
    /// not read: the one list of keys both the serde visitor below and the fast parser
    /// ([`super::fast`]) dispatch on.
    pub fn slot(&mut self, k: &[u8]) -> Option<ArgSlot<'_, 'a>> {
        Some(self.slot_at(Self::slot_index(k)?))
    }

    /// The index of the field a member of `args` with key `k` fills (see [`RawArgs::slot`]),
    /// for callers that look the key up once and fill the field many times.
    #[inline]
    pub fn slot_index(k: &[u8]) -> Option<u8> {
        Some(match k {
            b"External id" | b"external id" => 0,
            b"correlation" => 1,
            b"device" => 2,
            b"stream" => 3,
            b"blocks per SM" => 4,
            b"warps per SM" => 5,
            b"est. achieved occupancy %" => 6,
            b"registers per thread" => 7,
            b"shared memory" => 8,
            b"grid" => 9,
            b"block" => 10,
            b"bytes" => 11,
            b"graph id" => 12,
            b"Python module id" => 13,
            b"Device Type" => 14,
            b"Device Id" => 15,
            b"Total Allocated" => 16,
            b"name" => 17,
            b"labels" => 18,
            b"Input Dims" => 19,
            b"Input type" => 20,
            b"Concrete Inputs" => 21,
            b"flops" => 22,
            b"Addr" => 23,
            b"Bytes" => 24,
            b"Total Reserved" => 25,
            b"Seq" => 26,
            b"Comms Id" => 27,
            b"Process Group Name" => 28,
            b"Process Group ID" => 29,
            b"In msg nelems" => 30,
            b"Out msg nelems" => 31,
            b"dtype" => 32,
            _ => return None,
        })
    }

    /// The field of index `i` ([`RawArgs::slot_index`]).
    #[inline]
    pub fn slot_at(&mut self, i: u8) -> ArgSlot<'_, 'a> {
        use ArgSlot::*;
        match i {
            0 => Num(&mut self.external_id),
            1 => Num(&mut self.correlation),
            2 => Num(&mut self.device),
            3 => Num(&mut self.stream),
            4 => Num(&mut self.blocks_per_sm),
            5 => Num(&mut self.warps_per_sm),
            6 => Num(&mut self.occupancy),
            7 => Num(&mut self.registers),
            8 => Num(&mut self.shared_memory),
            9 => Dim3(&mut self.grid),
            10 => Dim3(&mut self.block),
            11 => Num(&mut self.bytes),
            12 => Num(&mut self.graph_id),
            13 => Num(&mut self.python_module_id),
            14 => Num(&mut self.device_type),
            15 => Num(&mut self.device_id),
            16 => Num(&mut self.total_allocated),
            17 => Str(&mut self.name),
            18 => Str(&mut self.labels),
            19 => Raw(&mut self.input_dims),
            20 => Raw(&mut self.input_type),
            21 => Raw(&mut self.concrete_inputs),
            22 => Num(&mut self.flops),
            23 => Num(&mut self.addr),
            24 => Num(&mut self.mem_bytes),
            25 => Num(&mut self.total_reserved),
            26 => Num(&mut self.seq),
            27 => Num(&mut self.comms_id),
            28 => Str(&mut self.pg_name),
            29 => Num(&mut self.pg_id),
            30 => Num(&mut self.in_nelems),
            31 => Num(&mut self.out_nelems),
            32 => Str(&mut self.dtype),
            _ => unreachable!("args slot index {i} out of range"),
        }
    }
}

impl<'de> Deserialize<'de> for RawArgs<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawArgs<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an args object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut a = RawArgs::default();
                while let Some(k) = m.next_key::<BStr<'de>>()? {
                    let k = k.0.unwrap_or_default();
                    match a.slot(k.as_bytes()) {
                        Some(ArgSlot::Num(v)) => *v = m.next_value()?,
                        Some(ArgSlot::Dim3(v)) => *v = m.next_value()?,
                        Some(ArgSlot::Str(v)) => *v = m.next_value()?,
                        Some(ArgSlot::Raw(v)) => *v = Some(m.next_value::<&RawValue>()?.get()),
                        None => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(a)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(RawArgs::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(RawArgs::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(RawArgs::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(RawArgs::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(RawArgs::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(RawArgs::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(RawArgs::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// Values the fast parser ([`super::fast`]) decoded while it read the raw texts of
/// [`RawEvent`], so that they are not decoded twice; `None` means "decode the text". They are
/// exactly what the text decodes to, so they are left out of `Debug` (an event read by serde,
/// which fills none of them, prints the same).
#[derive(Default, Clone, Copy, PartialEq)]
pub struct Decoded {
    /// `ts` in nanoseconds ([`micros_to_ns`] of the text).
    pub ts_ns: Option<i64>,
    /// `dur` in nanoseconds.
    pub dur_ns: Option<i64>,
    /// `pid` as an integer ([`IdValue::Int`] of the text).
    pub pid: Option<i64>,
    /// `tid` as an integer.
    pub tid: Option<i64>,
}

impl fmt::Debug for Decoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("_")
    }
}

/// One `traceEvents` entry, borrowing from the input.
#[derive(Debug, Default)]
pub struct RawEvent<'a> {
    /// `ph`: the event phase (`X`, `i`, `M`, `s`, `f`, …).
    pub ph: BStr<'a>,
    /// `cat`: the category (`kernel`, `cpu_op`, `cuda_runtime`, …).
    pub cat: BStr<'a>,
    /// `name`.
    pub name: BStr<'a>,
    /// Raw JSON text of `pid` (what a `&RawValue` holds).
    pub pid: Option<&'a str>,
    /// Raw JSON text of `tid`.
    pub tid: Option<&'a str>,
    /// Raw JSON text of `ts`.
    pub ts: Option<&'a str>,
    /// Raw JSON text of `dur`.
    pub dur: Option<&'a str>,
    /// Raw JSON text of `id`.
    pub id: Option<&'a str>,
    /// The `args` fields read.
    pub args: RawArgs<'a>,
    /// What the fast parser already decoded from the texts above.
    pub decoded: Decoded,
}

impl<'de> Deserialize<'de> for RawEvent<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawEvent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a trace event object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                let mut e = RawEvent::default();
                while let Some(k) = m.next_key::<BStr<'de>>()? {
                    let k = k.0.unwrap_or_default();
                    match k.as_bytes() {
                        b"ph" => e.ph = m.next_value()?,
                        b"cat" => e.cat = m.next_value()?,
                        b"name" => e.name = m.next_value()?,
                        b"pid" => e.pid = Some(m.next_value::<&RawValue>()?.get()),
                        b"tid" => e.tid = Some(m.next_value::<&RawValue>()?.get()),
                        b"ts" => e.ts = Some(m.next_value::<&RawValue>()?.get()),
                        b"dur" => e.dur = Some(m.next_value::<&RawValue>()?.get()),
                        b"id" => e.id = Some(m.next_value::<&RawValue>()?.get()),
                        b"args" => e.args = m.next_value()?,
                        _ => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(e)
            }
        }
        d.deserialize_map(V)
    }
}

pub use crate::model::MAX_TIME_NS;

/// Parses a JSON number text in microseconds (`1712195495505543.2`, `12`, `"7"`, `1e3`) into
/// integer nanoseconds, exactly for up to three fractional digits; `None` when it is no number
/// or its magnitude exceeds [`MAX_TIME_NS`].
pub fn micros_to_ns(raw: &str) -> Option<i64> {
    micros_to_ns_unbounded(raw).filter(|ns| ns.unsigned_abs() <= MAX_TIME_NS as u64)
}

/// Integer microseconds to nanoseconds, `None` past [`MAX_TIME_NS`] (as [`micros_to_ns`]).
/// One comparison: `|us| ≤ ⌊MAX_TIME_NS / 1000⌋` exactly when `|us × 1000| ≤ MAX_TIME_NS`
/// (and then the product cannot overflow).
#[inline]
pub fn micros_as_ns(us: i64) -> Option<i64> {
    (us.unsigned_abs() <= (MAX_TIME_NS / 1000) as u64).then(|| us * 1000)
}

fn micros_to_ns_unbounded(raw: &str) -> Option<i64> {
    let b = raw.as_bytes();
    // the common shapes, plain integer µs (`1669783687493694`, older traces) and one fraction
    // (`1712195495505543.250`): the general path below gives the same
    if b.len() <= 16 {
        if let Some(v) = super::digits::digits_value(b) {
            return (v as i64).checked_mul(1000);
        }
    }
    if let Some(dot) = b.iter().position(|&c| c == b'.') {
        let (int, frac) = (&b[..dot], &b[dot + 1..]);
        if int.len() <= 16 && (1..=3).contains(&frac.len()) {
            if let (Some(i), Some(f)) = (
                super::digits::digits_value(int),
                super::digits::digits_value(frac),
            ) {
                let scale = [0, 100, 10, 1][frac.len()];
                return (i as i64)
                    .checked_mul(1000)
                    .and_then(|ns| ns.checked_add((f * scale) as i64));
            }
        }
    }
    let s = raw.trim().trim_matches('"').trim();
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let (neg, mut i) = if b[0] == b'-' { (true, 1) } else { (false, 0) };
    let mut int: i64 = 0;
    let start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        int = int.checked_mul(10)?.checked_add((b[i] - b'0') as i64)?;
        i += 1;
    }
    let mut frac: i64 = 0;
    let mut digits = 0;
    let mut round_up = false;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            if digits < 3 {
                frac = frac * 10 + (b[i] - b'0') as i64;
            } else if digits == 3 {
                round_up = b[i] >= b'5';
            }
            digits += 1;
            i += 1;
        }
    }
    if i != b.len() || (i == start) {
        // exponent or garbage: fall back to f64
        let f: f64 = s.parse().ok()?;
        if !f.is_finite() {
            return None;
        }
        return Some((f * 1000.0).round() as i64);
    }
    while digits < 3 {
        frac *= 10;
        digits += 1;
    }
    let mut ns = int.checked_mul(1000)?.checked_add(frac)?;
    if round_up {
        ns = ns.checked_add(1)?;
    }
    Some(if neg { -ns } else { ns })
}

/// Reads a pid/tid/id value: integers, numeric strings (`"25738"`), `"stream 7"`, or names.
pub enum IdValue<'a> {
    /// A number (or a string holding one).
    Int(i64),
    /// A non-numeric string.
    Name(Cow<'a, str>),
    /// Absent or unusable.
    None,
}

/// Decodes a raw pid/tid/id value.
pub fn id_value(raw: Option<&str>) -> IdValue<'_> {
    let Some(raw) = raw else { return IdValue::None };
    if let Some(v) = super::digits::digits_value(raw.as_bytes()) {
        // the common shape: a plain non-negative integer (at most 18 digits)
        return IdValue::Int(v as i64);
    }
    let t = raw.trim();
    if let Some(inner) = t.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
        let inner_t = inner.trim();
        if let Ok(v) = inner_t.parse::<i64>() {
            return IdValue::Int(v);
        }
        return match serde_json::from_str::<String>(t) {
            Ok(s) => IdValue::Name(Cow::Owned(s)),
            Err(_) => IdValue::Name(Cow::Borrowed(inner)),
        };
    }
    if let Ok(v) = t.parse::<i64>() {
        return IdValue::Int(v);
    }
    if let Ok(v) = t.parse::<u64>() {
        return IdValue::Int(v as i64);
    }
    if let Ok(v) = t.parse::<f64>() {
        if v.is_finite() {
            return IdValue::Int(v as i64);
        }
    }
    IdValue::Name(Cow::Borrowed(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_hot_equals_default() {
        // each slot filled through `slot_noted` after a `clear_hot`, then cleared again: a hot
        // slot `clear_hot` forgets, or a cold one missing from COLD_SLOTS, stays filled
        for i in 0..=32u8 {
            let mut a = RawArgs::default();
            a.clear_hot();
            match a.slot_noted(i) {
                ArgSlot::Num(v) => *v = Num::Int(7),
                ArgSlot::Dim3(v) => *v = Dim3([1, 2, 3]),
                ArgSlot::Str(v) => *v = BStr(Some(Cow::Owned(format!("s{i}")))),
                ArgSlot::Raw(v) => *v = Some("[1]"),
            }
            a.clear_hot();
            assert_eq!(
                format!("{a:?}"),
                format!("{:?}", RawArgs::default()),
                "slot {i}"
            );
        }
    }

    #[test]
    fn clear_equals_default() {
        // every slot (`slot_at` covers 0..=32) filled with a non-default value, an owned
        // string where it is a string, then cleared: the same fields as a fresh default
        let mut a = RawArgs::default();
        for i in 0..=32u8 {
            let before = format!("{a:?}");
            match a.slot_at(i) {
                ArgSlot::Num(v) => *v = Num::Int(7),
                ArgSlot::Dim3(v) => *v = Dim3([1, 2, 3]),
                ArgSlot::Str(v) => *v = BStr(Some(Cow::Owned(format!("s{i}")))),
                ArgSlot::Raw(v) => *v = Some("[1]"),
            }
            assert_ne!(before, format!("{a:?}"), "slot {i} changed no field");
        }
        a.clear();
        assert_eq!(format!("{a:?}"), format!("{:?}", RawArgs::default()));
    }

    #[test]
    fn micros_as_ns_is_the_bounded_product() {
        // the one comparison agrees with the checked product and the bound at its edges
        let edge = MAX_TIME_NS / 1000;
        for us in [
            0,
            1,
            -1,
            1_623_142_623_460_111,
            edge - 1,
            edge,
            edge + 1,
            -edge,
            -edge - 1,
            i64::MAX / 1000,
            i64::MAX / 1000 + 1,
            i64::MAX,
            i64::MIN,
        ] {
            let expected = us
                .checked_mul(1000)
                .filter(|ns| ns.unsigned_abs() <= MAX_TIME_NS as u64);
            assert_eq!(micros_as_ns(us), expected, "{us}");
        }
        assert_eq!(micros_as_ns(edge), Some(edge * 1000));
        assert_eq!(micros_as_ns(edge + 1), None);
    }

    #[test]
    fn micros_exact() {
        assert_eq!(
            micros_to_ns("1712195495505543.2"),
            Some(1712195495505543200)
        );
        assert_eq!(micros_to_ns("1623142623460111"), Some(1623142623460111000));
        assert_eq!(micros_to_ns("0.001"), Some(1));
        assert_eq!(micros_to_ns("12.3456"), Some(12346));
        assert_eq!(micros_to_ns("-3.5"), Some(-3500));
        assert_eq!(micros_to_ns("1e3"), Some(1_000_000));
        assert_eq!(micros_to_ns("\"7\""), Some(7000));
        assert_eq!(micros_to_ns("N/A"), None);
        // found by the kineto fuzz target: a saturated f64 made `ts + dur` overflow
        assert_eq!(micros_to_ns("1212076812900E086"), None);
        assert_eq!(micros_to_ns("9223372036854775"), None);
        assert_eq!(micros_to_ns("4611686018427387"), Some(4611686018427387000));
    }

    #[test]
    fn event_fields_and_lenient_args() {
        let s =
            br#"{"ph":"X","cat":"kernel","name":"k\"1","pid":0,"tid":"stream 7","ts":5.25,"dur":2,
            "args":{"External id":"52","correlation":7001,"grid":[192,1,1],"blocks per SM":2.4,
            "device": null, "Comms Id": 123456789012345678901234567890, "x": {"y": [1]}}}"#;
        let e: RawEvent = serde_json::from_slice(s).unwrap();
        assert_eq!(e.name.0.as_deref(), Some("k\"1"));
        assert_eq!(micros_to_ns(e.ts.unwrap()), Some(5250));
        assert_eq!(e.args.external_id.id(), 52);
        assert_eq!(e.args.correlation.id(), 7001);
        assert_eq!(e.args.grid, Dim3([192, 1, 1]));
        assert_eq!(e.args.device, Num::None);
        assert!(matches!(id_value(e.tid), IdValue::Name(ref n) if n == "stream 7"));
    }

    #[test]
    fn duplicate_keys_do_not_fail() {
        let s = br#"{"name":"a","name":"b","args":{"External id":1,"external id":2}}"#;
        let e: RawEvent = serde_json::from_slice(s).unwrap();
        assert_eq!(e.name.0.as_deref(), Some("b"));
        assert_eq!(e.args.external_id.id(), 2);
    }
}
