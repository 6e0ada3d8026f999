//! AFL fuzz target `nsys`: see `stallscope_fuzz::targets::nsys`.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let _ = stallscope_fuzz::targets::nsys(data);
    });
}
