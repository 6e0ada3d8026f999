//! The rows of one query, stepped through SQLite's C interface.
//!
//! An export's profiler tables hold millions of rows of a few integers each. rusqlite's row
//! access checks the column index against the column count, asks the value's type, then the
//! value, and builds a `ValueRef`: about 150 instructions a value, nearly a quarter of the
//! reader's on a large export (docs/performance.md, fourteenth pass). Here a value is found
//! once and read in its type ([`Row::column`]). rusqlite still opens the connection, and
//! every other statement goes through it.

use std::ffi::{c_char, c_int, CStr};
use std::marker::PhantomData;
use std::ptr::NonNull;

use rusqlite::types::ValueRef;
use rusqlite::{ffi, Connection};

/// A prepared statement of a connection, finalized when dropped.
pub(super) struct Query<'c> {
    stmt: NonNull<ffi::sqlite3_stmt>,
    /// Number of result columns.
    cols: c_int,
    _conn: PhantomData<&'c Connection>,
}

/// The current row of a [`Query`] (until its next step).
pub(super) struct Row<'q> {
    stmt: NonNull<ffi::sqlite3_stmt>,
    cols: c_int,
    _query: PhantomData<&'q ()>,
}

/// The error SQLite reports for `code` on connection `db`, as rusqlite builds it (so a
/// message reads the same whichever way the statement ran).
///
/// # Safety
/// `db` is a live connection handle.
unsafe fn error(db: *mut ffi::sqlite3, code: c_int) -> rusqlite::Error {
    let text =
        |p: *const c_char| (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned());
    let msg = if ffi::sqlite3_errcode(db) == code {
        text(ffi::sqlite3_errmsg(db))
    } else {
        text(ffi::sqlite3_errstr(code))
    };
    rusqlite::Error::SqliteFailure(ffi::Error::new(code), msg)
}

impl<'c> Query<'c> {
    /// Prepares `sql`, one statement, on `conn`; `None` when `sql` holds no statement.
    pub(super) fn prepare(conn: &'c Connection, sql: &str) -> rusqlite::Result<Option<Self>> {
        let len = c_int::try_from(sql.len()).map_err(|_| {
            rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_TOOBIG), None)
        })?;
        let mut stmt = std::ptr::null_mut();
        // SAFETY: the handle is the live connection `conn` borrows for 'c; the text and its
        // length are `sql`'s; `stmt` receives the statement, finalized by `Drop`
        unsafe {
            let db = conn.handle();
            let rc = ffi::sqlite3_prepare_v2(
                db,
                sql.as_ptr().cast::<c_char>(),
                len,
                &mut stmt,
                std::ptr::null_mut(),
            );
            if rc != ffi::SQLITE_OK {
                if !stmt.is_null() {
                    ffi::sqlite3_finalize(stmt);
                }
                let e = error(db, rc);
                let offset = ffi::sqlite3_error_offset(db);
                return Err(match e {
                    rusqlite::Error::SqliteFailure(error, msg)
                        if error.code == ffi::ErrorCode::Unknown && offset >= 0 =>
                    {
                        // a syntax or schema error: where in the text (rusqlite's form)
                        rusqlite::Error::SqlInputError {
                            error,
                            msg: msg.unwrap_or_else(|| "error".into()),
                            sql: sql.to_string(),
                            offset,
                        }
                    }
                    e => e,
                });
            }
            Ok(NonNull::new(stmt).map(|stmt| Query {
                cols: ffi::sqlite3_column_count(stmt.as_ptr()),
                stmt,
                _conn: PhantomData,
            }))
        }
    }

    /// The next row, `None` after the last.
    #[inline]
    pub(super) fn step(&mut self) -> rusqlite::Result<Option<Row<'_>>> {
        // SAFETY: the statement is live until `Drop`; a row read through the `Row` borrows
        // `self`, so it cannot outlive this step
        match unsafe { ffi::sqlite3_step(self.stmt.as_ptr()) } {
            ffi::SQLITE_ROW => Ok(Some(Row {
                stmt: self.stmt,
                cols: self.cols,
                _query: PhantomData,
            })),
            ffi::SQLITE_DONE => Ok(None),
            rc => Err(unsafe { error(ffi::sqlite3_db_handle(self.stmt.as_ptr()), rc) }),
        }
    }
}

impl Drop for Query<'_> {
    fn drop(&mut self) {
        // SAFETY: prepared by `Query::prepare` and finalized once, here
        unsafe {
            ffi::sqlite3_finalize(self.stmt.as_ptr());
        }
    }
}

impl Row<'_> {
    /// Column `k` of the current row, `None` past the last column.
    ///
    /// One call per value: `sqlite3_column_value` finds the column once, where asking
    /// `sqlite3_column_type` and then `sqlite3_column_int64` finds it twice (each behind the
    /// connection's mutex calls). SQLite documents the value it returns as unprotected: read
    /// through `sqlite3_value_*` it is not thread-safe. Every connection of the reader is used
    /// by one thread at a time, and the value is read before the next step, which the
    /// borrow of the query guarantees.
    #[inline(always)]
    fn column(&self, k: usize) -> Option<*mut ffi::sqlite3_value> {
        let col = c_int::try_from(k).ok().filter(|&c| c < self.cols)?;
        // SAFETY: a column of the current row of a live statement
        Some(unsafe { ffi::sqlite3_column_value(self.stmt.as_ptr(), col) })
    }

    /// Column `k`'s value (`Null` past the last column).
    pub(super) fn value(&self, k: usize) -> ValueRef<'_> {
        let Some(v) = self.column(k) else {
            return ValueRef::Null;
        };
        // SAFETY: the value of a column of the current row (see `column`); the type first,
        // then the value in that type, then (text, blob) its length, in the order SQLite's
        // documentation gives; the bytes live until the next step
        unsafe {
            match ffi::sqlite3_value_type(v) {
                ffi::SQLITE_INTEGER => ValueRef::Integer(ffi::sqlite3_value_int64(v)),
                ffi::SQLITE_FLOAT => ValueRef::Real(ffi::sqlite3_value_double(v)),
                ffi::SQLITE_TEXT => {
                    let p = ffi::sqlite3_value_text(v);
                    ValueRef::Text(bytes(p, ffi::sqlite3_value_bytes(v)))
                }
                ffi::SQLITE_BLOB => {
                    let p = ffi::sqlite3_value_blob(v).cast::<u8>();
                    ValueRef::Blob(bytes(p, ffi::sqlite3_value_bytes(v)))
                }
                _ => ValueRef::Null,
            }
        }
    }

    /// Column `k` as an integer: an integer, a finite real truncated, or a text that reads as
    /// one (`None` otherwise).
    #[inline(always)]
    pub(super) fn i(&self, k: usize) -> Option<i64> {
        let v = self.column(k)?;
        // SAFETY: as in `value`; an integer (nearly every value) is read without the match
        // over every type
        unsafe {
            if ffi::sqlite3_value_type(v) == ffi::SQLITE_INTEGER {
                return Some(ffi::sqlite3_value_int64(v));
            }
        }
        match self.value(k) {
            ValueRef::Real(v) if v.is_finite() => Some(v as i64),
            ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
            _ => None,
        }
    }

    /// Column `k` as a string: a text (invalid UTF-8 replaced) or a number written out
    /// (`None` for NULL and blobs).
    pub(super) fn s(&self, k: usize) -> Option<String> {
        match self.value(k) {
            ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Integer(v) => Some(v.to_string()),
            ValueRef::Real(v) => Some(v.to_string()),
            _ => None,
        }
    }
}

/// `n` bytes at `p` (none when `p` is null or `n` not positive).
///
/// # Safety
/// `p` points at `n` readable bytes that outlive `'a`.
unsafe fn bytes<'a>(p: *const u8, n: c_int) -> &'a [u8] {
    match usize::try_from(n) {
        Ok(n) if n > 0 && !p.is_null() => std::slice::from_raw_parts(p, n),
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_rusqlite_reads_them() {
        // every type SQLite stores, through both paths: the same values, the same errors
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t(a, b, c);
             INSERT INTO t VALUES (1, -2.5, 'x'), (NULL, X'0102', ' 42 '),
                                  (9223372036854775807, 1e300, 'caf\u{e9}');",
        )
        .unwrap();
        let sql = "SELECT a, b, c FROM t";
        let mut want = Vec::new();
        let mut st = conn.prepare(sql).unwrap();
        let mut rows = st.query([]).unwrap();
        while let Some(r) = rows.next().unwrap() {
            want.push(
                (0..4)
                    .map(|k| format!("{:?}", r.get_ref(k).ok()))
                    .collect::<Vec<_>>(),
            );
        }
        let mut got = Vec::new();
        let mut q = Query::prepare(&conn, sql).unwrap().unwrap();
        let mut ints = Vec::new();
        while let Some(r) = q.step().unwrap() {
            // rusqlite answers an index past the last column with an error, here NULL
            got.push(
                (0..4)
                    .map(|k| format!("{:?}", Some(r.value(k)).filter(|_| k < 3)))
                    .collect::<Vec<_>>(),
            );
            ints.push((r.i(0), r.i(1), r.i(2), r.s(1)));
        }
        assert_eq!(got, want);
        assert_eq!(
            ints,
            [
                (Some(1), Some(-2), None, Some("-2.5".into())),
                (None, None, Some(42), None),
                (
                    Some(i64::MAX),
                    Some(i64::MAX),
                    None,
                    Some(1e300f64.to_string())
                ),
            ]
        );
        // an error names what SQLite names, as rusqlite's does
        let ours = Query::prepare(&conn, "SELECT nope FROM t").err().unwrap();
        let theirs = conn.prepare("SELECT nope FROM t").err().unwrap();
        assert_eq!(ours.to_string(), theirs.to_string());
        assert!(Query::prepare(&conn, "  ").unwrap().is_none());
    }
}
