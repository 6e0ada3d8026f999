//! AFL fuzz target `report`: see `stallscope_fuzz::targets::report`.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let _ = stallscope_fuzz::targets::report(data);
    });
}
