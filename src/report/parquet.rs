//! Parquet tables for SQL engines (`analyze --format parquet -o DIR`): one file per table,
//! every row carrying the job and the rank, so that the files of many jobs and ranks can be
//! read as one table by DuckDB, Spark, Trino or pandas.
//!
//! The renderer only re-shapes reports: [`Tables::add_rank`] takes one rank's [`Report`] (a
//! single trace, or each rank of a folder as the runner hands them over) and
//! [`Tables::add_ranks_section`] the folder's `ranks` section; [`Tables::write_dir`] writes
//! the files. Times are integer nanoseconds (`*_ns`): the report's µs times back in the unit
//! they were measured in (rounded to the ns where the report holds a mean). Shares are
//! fractions 0..1, names strings. The schema is [`SCHEMA_VERSION`], written in each file's
//! key-value metadata (`schema_version`) and documented column by column in
//! `docs/parquet.md`; the column lists below ([`TABLES`]) are what a test compares with that
//! document.
//!
//! Rows are ordered by rank (then file path), then as in the report: steps in time order,
//! kernels and operators by time, findings by recoverable time.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use super::ranks::RanksSection;
use super::Report;
use crate::model::classify::KernelCategory;

/// Version of the Parquet tables' schema (the `schema_version` key of every file). Bumped
/// only on incompatible changes; columns may be added.
pub const SCHEMA_VERSION: u32 = 1;

/// The type of a column.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `INT64`, never null.
    Int64,
    /// `INT64`, null when unknown.
    OptInt64,
    /// `DOUBLE`, never null.
    Double,
    /// `DOUBLE`, null when unknown.
    OptDouble,
    /// `BYTE_ARRAY` annotated `STRING` (UTF-8), never null.
    Utf8,
    /// `STRING`, null when absent.
    OptUtf8,
    /// `BOOLEAN`, never null.
    Bool,
}

impl Kind {
    /// The type as docs/parquet.md spells it (`int64`, `int64?`, `double`, `string`, …).
    pub fn as_str(&self) -> &'static str {
        match self {
            Kind::Int64 => "int64",
            Kind::OptInt64 => "int64?",
            Kind::Double => "double",
            Kind::OptDouble => "double?",
            Kind::Utf8 => "string",
            Kind::OptUtf8 => "string?",
            Kind::Bool => "boolean",
        }
    }
}

/// One table: its file name (without `.parquet`) and its columns in order.
pub struct TableSchema {
    /// File name stem.
    pub name: &'static str,
    /// (column, type).
    pub columns: &'static [(&'static str, Kind)],
}

use Kind::*;

const STEPS: TableSchema = TableSchema {
    name: "steps",
    columns: &[
        ("job", Utf8),
        ("rank", Int64),
        ("step", Utf8),
        ("step_index", Int64),
        ("start_ns", Int64),
        ("duration_ns", Int64),
        ("kernel_ns", Int64),
        ("memcpy_ns", Int64),
        ("memset_ns", Int64),
        ("communication_ns", Int64),
        ("runtime_ns", Int64),
        ("dataloader_ns", Int64),
        ("cpu_exec_ns", Int64),
        ("other_ns", Int64),
        ("phase", OptUtf8),
    ],
};

const GPU_TIMELINE: TableSchema = TableSchema {
    name: "gpu_timeline",
    columns: &[
        ("job", Utf8),
        ("rank", Int64),
        ("device", Int64),
        ("steps", Int64),
        ("total_ns", Int64),
        ("computation_ns", Int64),
        ("exposed_comm_ns", Int64),
        ("exposed_memcpy_ns", Int64),
        ("idle_ns", Int64),
    ],
};

const KERNELS: TableSchema = TableSchema {
    name: "kernels",
    columns: &[
        ("job", Utf8),
        ("rank", Int64),
        ("name", Utf8),
        ("category", Utf8),
        ("steps", Int64),
        ("calls", Int64),
        ("total_ns", Int64),
        ("min_ns", Int64),
        ("max_ns", Int64),
        ("share", Double),
        ("blocks_per_sm", OptDouble),
        ("occupancy_pct", OptDouble),
        ("tensor_core", Bool),
    ],
};

const OPS: TableSchema = TableSchema {
    name: "ops",
    columns: &[
        ("job", Utf8),
        ("rank", Int64),
        ("name", Utf8),
        ("steps", Int64),
        ("calls", Int64),
        ("host_self_ns", Int64),
        ("host_total_ns", Int64),
        ("device_self_ns", Int64),
        ("device_total_ns", Int64),
    ],
};

const COLLECTIVES: TableSchema = TableSchema {
    name: "collectives",
    columns: &[
        ("job", Utf8),
        ("rank", Int64),
        ("name", Utf8),
        ("steps", Int64),
        ("calls", Int64),
        ("total_ns", Int64),
        ("min_ns", Int64),
        ("max_ns", Int64),
    ],
};

const COPIES: TableSchema = TableSchema {
    name: "copies",
    columns: &[
        ("job", Utf8),
        ("rank", Int64),
        ("name", Utf8),
        ("kind", Utf8),
        ("direction", OptUtf8),
        ("host_memory", OptUtf8),
        ("steps", Int64),
        ("calls", Int64),
        ("total_ns", Int64),
        ("min_ns", Int64),
        ("max_ns", Int64),
        ("bytes", Int64),
        ("bytes_per_call", OptDouble),
        ("bandwidth_gbps", OptDouble),
        ("share", Double),
    ],
};

const FINDINGS: TableSchema = TableSchema {
    name: "findings",
    columns: &[
        ("job", Utf8),
        ("rank", OptInt64),
        ("scope", Utf8),
        ("position", Int64),
        ("id", Utf8),
        ("severity", Utf8),
        ("title", Utf8),
        ("recoverable_ns", Int64),
        ("recoverable_basis", Utf8),
    ],
};

const RANKS: TableSchema = TableSchema {
    name: "ranks",
    columns: &[
        ("job", Utf8),
        ("rank", Int64),
        ("path", Utf8),
        ("rank_source", Utf8),
        ("world_size", OptInt64),
        ("spans", Int64),
        ("steps", Int64),
        ("step_time_ns", Int64),
        ("window_ns", Int64),
        ("device", OptInt64),
        ("utilization", OptDouble),
        ("total_ns", Int64),
        ("computation_ns", Int64),
        ("exposed_comm_ns", Int64),
        ("overlapped_comm_ns", Int64),
        ("exposed_memcpy_ns", Int64),
        ("idle_ns", Int64),
        ("top_finding", OptUtf8),
        ("top_finding_recoverable_ns", OptInt64),
    ],
};

/// Every table, in the order they are written (`ranks` only for a folder).
pub const TABLES: [&TableSchema; 8] = [
    &STEPS,
    &GPU_TIMELINE,
    &KERNELS,
    &OPS,
    &COLLECTIVES,
    &FINDINGS,
    &RANKS,
    &COPIES,
];

/// One cell.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    I(Option<i64>),
    F(Option<f64>),
    S(Option<String>),
    B(bool),
}

impl Value {
    // the non-null values of a column of each type (nulls are in the definition levels)
    fn int(&self) -> Option<i64> {
        match self {
            Value::I(x) => *x,
            _ => None,
        }
    }
    fn float(&self) -> Option<f64> {
        match self {
            Value::F(x) => *x,
            _ => None,
        }
    }
    fn bytes(&self) -> Option<ByteArray> {
        match self {
            Value::S(x) => x.as_deref().map(ByteArray::from),
            _ => None,
        }
    }
    fn boolean(&self) -> Option<bool> {
        match self {
            Value::B(x) => Some(*x),
            _ => None,
        }
    }
}

fn i(v: i64) -> Value {
    Value::I(Some(v))
}

fn s(v: &str) -> Value {
    Value::S(Some(v.to_string()))
}

/// A report time (µs) as integer nanoseconds: the unit it was measured in (rounded to the ns
/// for means).
fn ns(us: f64) -> Value {
    i((us * 1000.0).round() as i64)
}

type Rows = Vec<Vec<Value>>;

/// The rows one rank (or one job-level source) adds, kept together until written so that the
/// files list ranks in order whatever order a folder's ranks finished in.
#[derive(Default)]
struct Chunk {
    rank: Option<i64>,
    path: String,
    /// Rows per table, indexed like [`TABLES`].
    rows: [Rows; 8],
}

/// The tables of one job, filled rank by rank, then written.
pub struct Tables {
    job: String,
    chunks: Vec<Chunk>,
    folder: bool,
}

impl Tables {
    /// Empty tables of the job `job` (the `job` column of every row).
    pub fn new(job: &str) -> Tables {
        Tables {
            job: job.to_string(),
            chunks: Vec::new(),
            folder: false,
        }
    }

    /// The job name.
    pub fn job(&self) -> &str {
        &self.job
    }

    /// Adds the rows of one rank's report: its steps, GPU timeline, kernels, collective
    /// kernels, operators, findings and copies, every row with `rank`.
    pub fn add_rank(&mut self, rank: i64, r: &Report) {
        let job = || s(&self.job);
        let steps = r.steps.len() as i64;
        let mut c = Chunk {
            rank: Some(rank),
            path: r.source.path.clone(),
            ..Chunk::default()
        };
        for (n, st) in r.steps.iter().enumerate() {
            let mut row = vec![
                job(),
                i(rank),
                s(&st.name),
                i(n as i64),
                ns(st.start_us),
                ns(st.duration_us),
            ];
            row.extend(st.breakdown_us.parts().iter().map(|(_, v)| ns(*v)));
            row.push(Value::S(st.phase.map(|p| p.as_str().to_string())));
            c.rows[0].push(row);
        }
        for t in &r.gpu_timeline {
            c.rows[1].push(vec![
                job(),
                i(rank),
                i(t.device),
                i(steps),
                ns(t.total_us),
                ns(t.computation_us),
                ns(t.exposed_comm_us),
                ns(t.exposed_memcpy_us),
                ns(t.idle_us),
            ]);
        }
        // kernel rows only: the copy and fill rows (JSON `copy`) have columns of their own
        for k in super::layout::kernel_rows(r) {
            let row = vec![
                job(),
                i(rank),
                s(&k.name),
                s(k.category.as_str()),
                i(steps),
                i(k.calls as i64),
                ns(k.total_us),
                ns(k.min_us),
                ns(k.max_us),
                Value::F(Some(k.share)),
                Value::F(k.blocks_per_sm),
                Value::F(k.occupancy_pct),
                Value::B(k.tensor_core),
            ];
            if k.category == KernelCategory::Communication {
                // the collectives' columns are the kernels' job, rank, name, then steps to max_ns
                let cols = [0, 1, 2, 4, 5, 6, 7, 8];
                c.rows[4].push(cols.iter().map(|&j| row[j].clone()).collect());
            }
            c.rows[2].push(row);
        }
        // the copy and fill rows, with what they moved
        for k in super::layout::copy_rows(r) {
            let Some(cp) = &k.copy else { continue };
            c.rows[7].push(vec![
                job(),
                i(rank),
                s(&k.name),
                s(&cp.kind),
                Value::S(cp.direction.clone()),
                Value::S(cp.host_memory.clone()),
                i(steps),
                i(k.calls as i64),
                ns(k.total_us),
                ns(k.min_us),
                ns(k.max_us),
                i(cp.bytes as i64),
                Value::F(cp.bytes_per_call),
                Value::F(cp.bandwidth_gbps),
                Value::F(Some(k.share)),
            ]);
        }
        for o in &r.ops {
            c.rows[3].push(vec![
                job(),
                i(rank),
                s(&o.name),
                i(steps),
                i(o.calls as i64),
                ns(o.host_self_us),
                ns(o.host_total_us),
                ns(o.device_self_us),
                ns(o.device_total_us),
            ]);
        }
        for (n, f) in r.findings.iter().enumerate() {
            c.rows[5].push(finding_row(job(), Some(rank), "rank", n, f));
        }
        self.chunks.push(c);
    }

    /// Adds a folder's `ranks` section: one row per rank in `ranks`, and the cross-rank
    /// findings in `findings` (scope `job`, rank null).
    pub fn add_ranks_section(&mut self, sec: &RanksSection) {
        self.folder = true;
        let job = || s(&self.job);
        let mut c = Chunk::default();
        for (n, f) in sec.findings.iter().enumerate() {
            c.rows[5].push(finding_row(job(), None, "job", n, f));
        }
        for k in &sec.ranks {
            c.rows[6].push(vec![
                job(),
                i(k.rank),
                s(&k.path),
                s(k.rank_source.as_str()),
                Value::I(k.world_size),
                i(k.spans as i64),
                i(k.steps as i64),
                ns(k.step_time_us),
                ns(k.window_us),
                Value::I(k.device),
                Value::F(k.utilization),
                ns(k.total_us),
                ns(k.computation_us),
                ns(k.exposed_comm_us),
                ns(k.overlapped_comm_us),
                ns(k.exposed_memcpy_us),
                ns(k.idle_us),
                Value::S(k.top_finding.as_ref().map(|f| f.id.clone())),
                match &k.top_finding {
                    Some(f) => ns(f.recoverable_us),
                    None => Value::I(None),
                },
            ]);
        }
        self.chunks.push(c);
    }

    /// Writes one `TABLE.parquet` per table into `dir` (created if missing; existing files of
    /// the same names are replaced) and returns their paths. `ranks.parquet` is written for a
    /// folder only.
    pub fn write_dir(&mut self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        // job-level rows (no rank) first, then ranks in order, then by file
        self.chunks
            .sort_by(|a, b| (a.rank, &a.path).cmp(&(b.rank, &b.path)));
        let mut written = Vec::new();
        for (t, schema) in TABLES.iter().enumerate() {
            if schema.name == "ranks" && !self.folder {
                continue;
            }
            let path = dir.join(format!("{}.parquet", schema.name));
            let rows = self.chunks.iter().flat_map(|c| &c.rows[t]);
            write_table(&path, schema, &self.job, rows)
                .map_err(|e| io::Error::other(format!("{}: {e}", path.display())))?;
            written.push(path);
        }
        Ok(written)
    }
}

fn finding_row(
    job: Value,
    rank: Option<i64>,
    scope: &str,
    n: usize,
    f: &super::mirrors::FindingInfo,
) -> Vec<Value> {
    vec![
        job,
        Value::I(rank),
        s(scope),
        i(n as i64),
        s(f.id),
        s(f.severity.as_str()),
        s(&f.title),
        ns(f.recoverable_us),
        s(&f.recoverable_basis),
    ]
}

fn field(name: &str, kind: Kind) -> parquet::errors::Result<Type> {
    let (physical, logical, optional) = match kind {
        Int64 => (Physical::INT64, None, false),
        OptInt64 => (Physical::INT64, None, true),
        Double => (Physical::DOUBLE, None, false),
        OptDouble => (Physical::DOUBLE, None, true),
        Utf8 => (Physical::BYTE_ARRAY, Some(LogicalType::String), false),
        OptUtf8 => (Physical::BYTE_ARRAY, Some(LogicalType::String), true),
        Bool => (Physical::BOOLEAN, None, false),
    };
    Type::primitive_type_builder(name, physical)
        .with_repetition(if optional {
            Repetition::OPTIONAL
        } else {
            Repetition::REQUIRED
        })
        .with_logical_type(logical)
        .build()
}

/// Writes one table as one row group, Snappy-compressed, with the `schema_version`,
/// `generator`, `table` and `job` key-value metadata.
fn write_table<'a>(
    path: &Path,
    schema: &TableSchema,
    job: &str,
    rows: impl Iterator<Item = &'a Vec<Value>> + Clone,
) -> parquet::errors::Result<()> {
    let fields = schema
        .columns
        .iter()
        .map(|(n, k)| field(n, *k).map(Arc::new))
        .collect::<parquet::errors::Result<Vec<_>>>()?;
    let root = Type::group_type_builder("stallscope")
        .with_fields(fields)
        .build()?;
    let meta = vec![
        KeyValue::new("schema_version".into(), SCHEMA_VERSION.to_string()),
        KeyValue::new(
            "generator".into(),
            format!("stallscope {}", env!("CARGO_PKG_VERSION")),
        ),
        KeyValue::new("table".into(), schema.name.to_string()),
        KeyValue::new("job".into(), job.to_string()),
    ];
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_created_by(format!("stallscope {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(meta))
        .build();
    let file = File::create(path)?;
    let mut w = SerializedFileWriter::new(file, Arc::new(root), Arc::new(props))?;
    let mut rg = w.next_row_group()?;
    let mut col = 0;
    while let Some(mut cw) = rg.next_column()? {
        let optional = matches!(schema.columns[col].1, OptInt64 | OptDouble | OptUtf8);
        let cells = rows.clone().map(|r| &r[col]);
        let defs: Vec<i16> = cells
            .clone()
            .map(|v| match v {
                Value::I(None) | Value::F(None) | Value::S(None) => 0,
                _ => 1,
            })
            .collect();
        let defs = optional.then_some(defs.as_slice());
        match schema.columns[col].1 {
            Int64 | OptInt64 => {
                let v: Vec<i64> = cells.filter_map(Value::int).collect();
                cw.typed::<Int64Type>().write_batch(&v, defs, None)?
            }
            Double | OptDouble => {
                let v: Vec<f64> = cells.filter_map(Value::float).collect();
                cw.typed::<DoubleType>().write_batch(&v, defs, None)?
            }
            Utf8 | OptUtf8 => {
                let v: Vec<ByteArray> = cells.filter_map(Value::bytes).collect();
                cw.typed::<ByteArrayType>().write_batch(&v, defs, None)?
            }
            Bool => {
                let v: Vec<bool> = cells.filter_map(Value::boolean).collect();
                cw.typed::<BoolType>().write_batch(&v, defs, None)?
            }
        };
        cw.close()?;
        col += 1;
    }
    rg.close()?;
    w.close()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row has one cell per column, of the column's type (a mismatch would write a
    /// column shorter than the others, which the writer rejects or a reader misreads).
    fn check_shapes(t: &Tables) {
        for c in &t.chunks {
            for (rows, schema) in c.rows.iter().zip(TABLES) {
                for r in rows {
                    assert_eq!(r.len(), schema.columns.len(), "{}", schema.name);
                    for (v, (name, k)) in r.iter().zip(schema.columns) {
                        let ok = matches!(
                            (v, k),
                            (Value::I(Some(_)), Int64)
                                | (Value::I(_), OptInt64)
                                | (Value::F(Some(_)), Double)
                                | (Value::F(_), OptDouble)
                                | (Value::S(Some(_)), Utf8)
                                | (Value::S(_), OptUtf8)
                                | (Value::B(_), Bool)
                        );
                        assert!(ok, "{}.{name}: {v:?} is not {k:?}", schema.name);
                    }
                }
            }
        }
    }

    #[test]
    fn rows_match_their_schema_and_times_are_ns() {
        let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        let trace = crate::ingest::load(
            samples
                .join("resnet50_v100_num_workers_0.pt.trace.json.gz")
                .to_str()
                .unwrap(),
            &Default::default(),
        )
        .unwrap();
        let a = crate::analysis::analyze(&trace, &Default::default());
        let r = Report::new(&trace, &a, crate::diagnose::diagnose(&trace, &a));
        let mut t = Tables::new("j");
        t.add_rank(3, &r);
        check_shapes(&t);
        let c = &t.chunks[0];
        assert_eq!(c.rows[0].len(), r.steps.len());
        // the sample's 2 copy rows are not kernel rows: they are the copies table's, with
        // their bytes (12 pageable uploads of 115,607,040 bytes in all)
        assert_eq!(c.rows[2].len(), r.kernels.len() - 2);
        assert_eq!(c.rows[7].len(), 2);
        assert_eq!(c.rows[7][0][4], Value::S(Some("HtoD".into())));
        assert_eq!(c.rows[7][0][5], Value::S(Some("pageable".into())));
        assert_eq!(c.rows[7][0][11], Value::I(Some(115_607_040)));
        assert_eq!(c.rows[7][1][4], Value::S(None), "a fill has no direction");
        assert_eq!(c.rows[3].len(), r.ops.len());
        assert_eq!(c.rows[5].len(), r.findings.len());
        // the first step's duration, µs → ns
        assert_eq!(
            c.rows[0][0][5],
            Value::I(Some((r.steps[0].duration_us * 1000.0).round() as i64))
        );
        let dir = std::env::temp_dir().join(format!("stallscope-pq-unit-{}", std::process::id()));
        let files = t.write_dir(&dir).unwrap();
        assert_eq!(files.len(), 7, "no ranks.parquet for a single trace");
        for f in &files {
            let bytes = std::fs::read(f).unwrap();
            assert_eq!(&bytes[..4], b"PAR1");
            assert_eq!(&bytes[bytes.len() - 4..], b"PAR1");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
