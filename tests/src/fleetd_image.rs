//! `FleetdImage`: this build's `fleetd` as a Docker image, made without a registry or
//! a base image: the binary, the shared libraries `ldd` names for it and the dynamic
//! loader, in a tar that `docker import` turns into an image whose entry point is
//! `fleetd`. The tag follows the binary's size and modification time, so a rebuilt
//! `fleetd` gets an image of its own and an unchanged one is imported once.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::UNIX_EPOCH;

use anyhow::{Context, Result, bail};

use crate::docker::docker;
use crate::process_fleet::binary;

/// The repository the images are tagged in.
const REPOSITORY: &str = "fleet-fleetd-test";

/// An image holding this build's `fleetd`.
pub struct FleetdImage {
    /// `repository:tag`, for `docker create`.
    pub name: String,
}

impl FleetdImage {
    /// The image of the `fleetd` built beside the running test, imported if missing.
    /// Images of earlier builds are removed once this one is in place.
    pub fn of_this_build() -> Result<Self> {
        let fleetd = binary("fleetd");
        let meta = fs::metadata(&fleetd)?;
        let modified = meta.modified()?.duration_since(UNIX_EPOCH)?.as_nanos();
        let tag = format!("{:x}-{:x}", meta.len(), modified);
        let name = format!("{REPOSITORY}:{tag}");
        if docker(&["image", "inspect", "--format", "{{.Id}}", &name]).is_err() {
            import(&fleetd, &name)?;
            remove_other_tags(&tag);
        }
        Ok(Self { name })
    }
}

/// Imports `fleetd` and what it links to as the image `name`.
fn import(fleetd: &Path, name: &str) -> Result<()> {
    let stage = tempfile::Builder::new().prefix("fleetd-image-").tempdir()?;
    let root = stage.path().join("root");
    fs::create_dir(&root)?;
    fs::copy(fleetd, root.join("fleetd"))?;
    for library in linked_libraries(fleetd)? {
        let target = root.join(library.strip_prefix("/")?);
        fs::create_dir_all(target.parent().context("a library has a directory")?)?;
        // `fs::copy` follows symbolic links: the image holds the files themselves.
        fs::copy(&library, &target).with_context(|| format!("copying {}", library.display()))?;
    }
    let tar = stage.path().join("image.tar");
    let packed = Command::new("tar")
        .arg("-C")
        .arg(&root)
        .arg("-cf")
        .arg(&tar)
        .arg(".")
        .status()?;
    if !packed.success() {
        bail!("tar of the fleetd image failed");
    }
    docker(&[
        "import",
        "--change",
        r#"ENTRYPOINT ["/fleetd"]"#,
        tar.to_str().context("a UTF-8 temporary path")?,
        name,
    ])?;
    Ok(())
}

/// Every file `ldd` says `binary` loads: its libraries and the dynamic loader.
fn linked_libraries(binary: &Path) -> Result<Vec<PathBuf>> {
    let output = Command::new("ldd").arg(binary).output()?;
    if !output.status.success() {
        bail!(
            "ldd {} failed: {}",
            binary.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // `libm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x…)`, `/lib64/ld-linux-x86-64.so.2
    // (0x…)`; the vDSO has no file.
    Ok(String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter(|word| word.starts_with('/'))
        .map(PathBuf::from)
        .collect())
}

/// Removes the images of other builds; one still in use by a running test stays.
fn remove_other_tags(current: &str) {
    let Ok(tags) = docker(&["image", "ls", REPOSITORY, "--format", "{{.Tag}}"]) else {
        return;
    };
    for tag in tags.lines().filter(|tag| *tag != current) {
        let _ = docker(&["image", "rm", &format!("{REPOSITORY}:{tag}")]);
    }
}
