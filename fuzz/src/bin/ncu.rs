//! AFL fuzz target `ncu`: see `stallscope_fuzz::targets::ncu`.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let _ = stallscope_fuzz::targets::ncu(data);
    });
}
