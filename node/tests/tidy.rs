//! Tidy checks over the whole workspace, run by `cargo test`: every Rust file opens
//! with a `//!` doc, no test is ignored, no placeholder macro ships, files stay small,
//! and the example configs load and validate.

use std::fs;
use std::path::{Path, PathBuf};

use fleet_node::state::FleetSettings;

const FILE_LINES_MAX: usize = 1_200;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

fn workspace_rust_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    rust_files(&workspace_root(), &mut found);
    assert!(
        found.len() > 20,
        "found only {} files; is the walk broken?",
        found.len()
    );
    found
}

#[test]
fn every_rust_file_opens_with_a_module_doc() {
    let missing: Vec<_> = workspace_rust_files()
        .into_iter()
        .filter(|path| {
            !fs::read_to_string(path)
                .unwrap()
                .trim_start()
                .starts_with("//!")
        })
        .collect();
    assert!(missing.is_empty(), "files without a `//!` doc: {missing:?}");
}

#[test]
fn no_test_is_ignored_and_no_placeholder_ships() {
    let forbidden = [
        concat!("#[", "ignore"),
        concat!("todo", "!("),
        concat!("unimplemented", "!("),
    ];
    for path in workspace_rust_files() {
        let text = fs::read_to_string(&path).unwrap();
        for pattern in forbidden {
            assert!(
                !text.contains(pattern),
                "{} contains `{pattern}`",
                path.display()
            );
        }
    }
}

#[test]
fn files_stay_small() {
    for path in workspace_rust_files() {
        let lines = fs::read_to_string(&path).unwrap().lines().count();
        assert!(
            lines <= FILE_LINES_MAX,
            "{} has {lines} lines (limit {FILE_LINES_MAX}); split it",
            path.display()
        );
    }
}

#[test]
fn the_example_fleet_config_loads_and_validates() {
    let text = fs::read_to_string(workspace_root().join("config/fleet.toml")).unwrap();
    let settings: FleetSettings = toml::from_str(&text).unwrap();
    settings.validate().unwrap();
    assert_eq!(
        settings,
        FleetSettings::default_for("home"),
        "the example documents the defaults"
    );
}
