//! Compiles `proto/*.proto` with protox (a pure-Rust protobuf compiler), so building
//! Fleet never needs a system `protoc`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["proto/fleet.proto", "proto/raft.proto"];
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        // A Raft payload is handed on as it arrived, not copied into a `Vec`.
        .bytes(".fleet.raft.v1.RaftMessage.payload")
        .compile_fds(descriptors)?;
    Ok(())
}
