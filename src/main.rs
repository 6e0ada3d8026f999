//! The `stallscope` binary: see `stallscope --help`.

fn main() {
    std::process::exit(stallscope::cli::run());
}
