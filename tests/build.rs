//! Compiles the subset of etcd's v3 API the benchmarks drive (`proto/etcd_kv.proto`)
//! with protox, so no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let file = "proto/etcd_kv.proto";
    println!("cargo:rerun-if-changed={file}");
    let descriptors = protox::compile([file], ["proto"])?;
    tonic_prost_build::compile_fds(descriptors)?;
    Ok(())
}
