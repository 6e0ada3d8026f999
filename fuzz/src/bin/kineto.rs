//! AFL fuzz target `kineto`: see `stallscope_fuzz::targets::kineto`.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let _ = stallscope_fuzz::targets::kineto(data);
    });
}
