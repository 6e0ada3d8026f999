//! AFL fuzz target `slice`: see `stallscope_fuzz::targets::slice`.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let _ = stallscope_fuzz::targets::slice(data);
    });
}
