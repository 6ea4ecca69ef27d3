//! Writes container images for the image tests: layers as tar streams (plain, gzip or zstd) built entry by
//! entry with the `tar` crate, packed as a `docker save` tarball (`manifest.json`, `<id>.json`,
//! `<id>/layer.tar`) or an OCI image layout (`oci-layout`, `index.json`, `blobs/sha256/…`; a directory or a
//! tar of one). Blob names stand for digests: they are unique hex names, not SHA-256 sums (cudadiag takes
//! digests as the manifest declares them and does not hash blobs).

use std::io::Write;
use std::path::Path;

/// One entry of a layer.
#[derive(Clone, Debug)]
pub enum Ent {
    File(String, Vec<u8>, u32),
    Dir(String),
    Symlink(String, String),
    Hardlink(String, String),
    Fifo(String),
}

/// A layer: its entries in order, and how it is compressed.
#[derive(Clone, Debug, Default)]
pub struct Layer {
    pub entries: Vec<Ent>,
    pub compression: Pack,
}

/// A compression of a layer or of the whole image file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pack {
    #[default]
    None,
    Gzip,
    Zstd,
}

impl Layer {
    pub fn new() -> Layer {
        Layer::default()
    }
    pub fn packed(mut self, p: Pack) -> Layer {
        self.compression = p;
        self
    }
    pub fn file(mut self, path: &str, bytes: &[u8]) -> Layer {
        self.entries.push(Ent::File(path.into(), bytes.to_vec(), 0o644));
        self
    }
    pub fn exe(mut self, path: &str, bytes: &[u8]) -> Layer {
        self.entries.push(Ent::File(path.into(), bytes.to_vec(), 0o755));
        self
    }
    pub fn dir(mut self, path: &str) -> Layer {
        self.entries.push(Ent::Dir(path.into()));
        self
    }
    pub fn symlink(mut self, path: &str, target: &str) -> Layer {
        self.entries.push(Ent::Symlink(path.into(), target.into()));
        self
    }
    pub fn hardlink(mut self, path: &str, target: &str) -> Layer {
        self.entries.push(Ent::Hardlink(path.into(), target.into()));
        self
    }
    pub fn fifo(mut self, path: &str) -> Layer {
        self.entries.push(Ent::Fifo(path.into()));
        self
    }
    /// `.wh.NAME` beside `path`: deletes `path` from the layers below.
    pub fn whiteout(self, path: &str) -> Layer {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        self.file(&format!("{dir}/.wh.{name}"), b"")
    }
    /// `.wh..wh..opq` in `dir`: hides what the layers below put there.
    pub fn opaque(self, dir: &str) -> Layer {
        self.file(&format!("{dir}/.wh..wh..opq"), b"")
    }

    /// The layer's bytes, compressed as asked.
    pub fn bytes(&self) -> Vec<u8> {
        pack(&tar_of(&self.entries), self.compression)
    }
}

/// A tar of `entries`, names written as given (GNU long names for long ones; `../` kept: hostile tests need it).
pub fn tar_of(entries: &[Ent]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        let (name, data): (&str, &[u8]) = match e {
            Ent::File(n, d, mode) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(*mode);
                h.set_size(d.len() as u64);
                (n, d)
            }
            Ent::Dir(n) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                (n, &[])
            }
            Ent::Symlink(n, t) | Ent::Hardlink(n, t) => {
                h.set_entry_type(if matches!(e, Ent::Symlink(..)) {
                    tar::EntryType::Symlink
                } else {
                    tar::EntryType::Link
                });
                h.set_mode(0o777);
                h.set_size(0);
                raw_name(&mut h, t.as_bytes(), true);
                (n, &[])
            }
            Ent::Fifo(n) => {
                h.set_entry_type(tar::EntryType::Fifo);
                h.set_mode(0o644);
                h.set_size(0);
                (n, &[])
            }
        };
        raw_name(&mut h, name.as_bytes(), false);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    b.into_inner().unwrap()
}

/// Writes a name (or link target) into the header's field byte for byte, without the `tar` crate's checks
/// (which refuse `..`: the hostile tests need it).
fn raw_name(h: &mut tar::Header, name: &[u8], link: bool) {
    let gnu = h.as_gnu_mut().unwrap();
    let field: &mut [u8] = if link { &mut gnu.linkname } else { &mut gnu.name };
    assert!(name.len() < field.len(), "test names fit the header");
    field.fill(0);
    field[..name.len()].copy_from_slice(name);
}

/// `data` compressed as asked.
pub fn pack(data: &[u8], p: Pack) -> Vec<u8> {
    match p {
        Pack::None => data.to_vec(),
        Pack::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Pack::Zstd => ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest),
    }
}

/// An image: layers bottom first, and its config.
#[derive(Clone, Debug)]
pub struct Image {
    pub layers: Vec<Layer>,
    pub env: Vec<String>,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub working_dir: String,
    pub user: String,
    pub arch: String,
}

impl Image {
    pub fn new(layers: Vec<Layer>) -> Image {
        Image {
            layers,
            env: vec!["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()],
            entrypoint: Vec::new(),
            cmd: Vec::new(),
            working_dir: String::new(),
            user: String::new(),
            arch: "amd64".into(),
        }
    }
    /// The variables a CUDA 13 application image sets for the container toolkit (NVIDIA's own base images add
    /// `brand=…` alternatives to `NVIDIA_REQUIRE_CUDA` that admit older data-centre drivers).
    pub fn cuda13(self) -> Image {
        self.env("NVIDIA_VISIBLE_DEVICES=all")
            .env("NVIDIA_DRIVER_CAPABILITIES=compute,utility")
            .env("NVIDIA_REQUIRE_CUDA=cuda>=13.0")
            .env("CUDA_VERSION=13.0.0")
    }
    pub fn env(mut self, kv: &str) -> Image {
        self.env.push(kv.into());
        self
    }
    pub fn entrypoint(mut self, argv: &[&str]) -> Image {
        self.entrypoint = argv.iter().map(|s| s.to_string()).collect();
        self
    }
    pub fn cmd(mut self, argv: &[&str]) -> Image {
        self.cmd = argv.iter().map(|s| s.to_string()).collect();
        self
    }

    fn config(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "architecture": self.arch,
            "os": "linux",
            "config": {
                "Env": self.env,
                "Entrypoint": if self.entrypoint.is_empty() { serde_json::Value::Null } else { serde_json::json!(self.entrypoint) },
                "Cmd": self.cmd,
                "WorkingDir": self.working_dir,
                "User": self.user,
            },
            "rootfs": {"type": "layers", "diff_ids": []},
        }))
        .unwrap()
    }

    /// The `docker save` members: `(name, bytes)`.
    pub fn docker_members(&self) -> Vec<(String, Vec<u8>)> {
        let config_id = hex_id(0);
        let mut members = Vec::new();
        let mut names = Vec::new();
        for (i, l) in self.layers.iter().enumerate() {
            let id = hex_id(i as u64 + 1);
            names.push(format!("{id}/layer.tar"));
            members.push((format!("{id}/layer.tar"), l.bytes()));
        }
        members.push((format!("{config_id}.json"), self.config()));
        let manifest = serde_json::json!([{
            "Config": format!("{config_id}.json"),
            "RepoTags": ["test/app:1"],
            "Layers": names,
        }]);
        members.push(("manifest.json".into(), serde_json::to_vec(&manifest).unwrap()));
        members
    }

    /// The OCI layout members: `(name, bytes)`.
    pub fn oci_members(&self) -> Vec<(String, Vec<u8>)> {
        let mut members = Vec::new();
        let mut layers = Vec::new();
        for (i, l) in self.layers.iter().enumerate() {
            let bytes = l.bytes();
            let id = hex_id(i as u64 + 100);
            let media = match l.compression {
                Pack::None => "application/vnd.oci.image.layer.v1.tar",
                Pack::Gzip => "application/vnd.oci.image.layer.v1.tar+gzip",
                Pack::Zstd => "application/vnd.oci.image.layer.v1.tar+zstd",
            };
            layers.push(serde_json::json!({"mediaType": media, "digest": format!("sha256:{id}"), "size": bytes.len()}));
            members.push((format!("blobs/sha256/{id}"), bytes));
        }
        let config = self.config();
        let config_id = hex_id(1);
        members.push((format!("blobs/sha256/{config_id}"), config.clone()));
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": format!("sha256:{config_id}"), "size": config.len()},
            "layers": layers,
        }))
        .unwrap();
        let manifest_id = hex_id(2);
        members.push((format!("blobs/sha256/{manifest_id}"), manifest.clone()));
        let index = serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": [{
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": format!("sha256:{manifest_id}"),
                "size": manifest.len(),
                "platform": {"architecture": self.arch, "os": "linux"},
                "annotations": {"org.opencontainers.image.ref.name": "test/app:1"},
            }],
        });
        members.push(("index.json".into(), serde_json::to_vec(&index).unwrap()));
        members.push(("oci-layout".into(), br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec()));
        members
    }

    /// A `docker save` tarball at `out`, the whole file compressed as asked.
    pub fn docker_save(&self, out: &Path, p: Pack) {
        std::fs::write(out, pack(&archive(&self.docker_members()), p)).unwrap();
    }

    /// An OCI image layout directory at `dir`.
    pub fn oci_dir(&self, dir: &Path) {
        for (name, bytes) in self.oci_members() {
            let f = dir.join(name);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, bytes).unwrap();
        }
    }

    /// A tar of an OCI image layout at `out`.
    pub fn oci_tar(&self, out: &Path) {
        std::fs::write(out, archive(&self.oci_members())).unwrap();
    }
}

/// A tar of `(name, bytes)` members.
pub fn archive(members: &[(String, Vec<u8>)]) -> Vec<u8> {
    let entries: Vec<Ent> = members
        .iter()
        .map(|(n, b)| Ent::File(n.clone(), b.clone(), 0o644))
        .collect();
    tar_of(&entries)
}

/// A 64-digit hex name, unique per `n`.
fn hex_id(n: u64) -> String {
    format!(
        "{:064x}",
        n.wrapping_mul(0x9e37_79b9_7f4a_7c15) as u128 | (u128::from(n) << 64)
    )
}

/// A base layer with what a dynamically linked C++ program needs from the system: the test machine's own
/// loader, libc, libm, libgcc_s and libstdc++, laid out as Debian does (`/lib` and `/lib64` links to `/usr`).
pub fn system_layer() -> Layer {
    let dir = Path::new("/lib/x86_64-linux-gnu");
    let mut l = Layer::new()
        .file("etc/debian_version", b"12.0\n")
        .dir("usr")
        .dir("usr/lib")
        .dir("usr/lib/x86_64-linux-gnu")
        .dir("usr/lib64")
        .symlink("lib", "usr/lib")
        .symlink("lib64", "usr/lib64")
        .symlink(
            "usr/lib64/ld-linux-x86-64.so.2",
            "../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
        );
    for name in [
        "ld-linux-x86-64.so.2",
        "libc.so.6",
        "libm.so.6",
        "libgcc_s.so.1",
        "libstdc++.so.6",
    ] {
        let bytes = std::fs::read(std::fs::canonicalize(dir.join(name)).unwrap()).unwrap();
        l = l.file(&format!("usr/lib/x86_64-linux-gnu/{name}"), &bytes);
    }
    l
}

/// A `libcudart.so.13` (real file `libcudart.so.13.0.96`) defining every `@libcudart.so.13` function the
/// fixture `program` needs, under that version: built with the system's `cc`.
pub fn fake_cudart(work: &Path, program: &Path) -> Vec<u8> {
    let out = std::process::Command::new("nm")
        .args(["-D", "--undefined-only"])
        .arg(program)
        .output()
        .unwrap();
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .filter_map(|s| s.strip_suffix("@libcudart.so.13"))
        .map(str::to_string)
        .collect();
    assert!(!names.is_empty(), "the fixture needs libcudart symbols");
    let src: String = names
        .iter()
        .map(|n| format!("int {n}(void) {{ return 0; }}\n"))
        .collect();
    std::fs::write(work.join("cudart.c"), src).unwrap();
    std::fs::write(work.join("cudart.map"), "libcudart.so.13 { global: *; };\n").unwrap();
    let so = work.join("libcudart.so.13.0.96");
    super::loader_build::cc(&[
        "-shared",
        "-fPIC",
        "-nostdlib",
        "-Wl,-soname,libcudart.so.13",
        &format!("-Wl,--version-script={}", work.join("cudart.map").display()),
        "-o",
        so.to_str().unwrap(),
        work.join("cudart.c").to_str().unwrap(),
    ]);
    std::fs::read(so).unwrap()
}
