//! Simulated hosts, for the tests of teammates on other machines: each a Linux network
//! namespace with its own veth address, its own `sshd` (Debian's openssh-server, on port 22
//! of its own address, key-only, with a key made for the test) and its own filesystem view,
//! a mount namespace where the test's directory (the lead's root, home and project), `/tmp`,
//! `/run` and `/root` are private and empty: a remote teammate that reads a local file by
//! mistake fails its test. The host's own files are in `/run/host` (the test's
//! `hosts/<name>` directory), and swarm's binary at `/run/host-bin/swarm`.
//!
//! Only the namespaces' addresses are used (a /24 of 10.64.0.0/10 per host: the lead's side
//! is `.1`, the host `.2`). Needs root, `unshare`, `nsenter`, `ip` and `sshd`; without them
//! [`SimNet::start`] says so and returns `None` (a failure under `CI=true`).

use std::io::BufRead;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::harness::{SWARM, TestEnv, require};

const SSHD: &str = "/usr/sbin/sshd";

/// What the host's mount namespace is made of, before it sleeps: its own `/run` (where its
/// files and swarm's binary are bound), then the test's directory, `/root` and `/tmp`
/// hidden under empty file systems.
const SETUP: &str = r#"set -e
hostname "$HOST_NAME"
mount -t tmpfs tmpfs /run
mkdir -p /run/host /run/sshd /run/host-bin
mount --bind "$HOST_DIR" /run/host
touch /run/host-bin/swarm
mount --bind "$SWARM_BIN" /run/host-bin/swarm
mount -t tmpfs tmpfs "$ENV_DIR"
mount -t tmpfs tmpfs /root
mount -t tmpfs tmpfs /tmp
echo ready
exec sleep 100000"#;

/// One simulated host.
pub struct SimHost {
    pub name: String,
    /// Its address, on its side of the veth pair.
    pub address: String,
    /// The lead's side of its veth pair: where it reaches the lead's machine.
    pub gateway: String,
    /// Its own files, seen there as `/run/host`.
    pub dir: PathBuf,
    veth: String,
    holder: Child,
    sshd: Option<Child>,
}

/// Simulated hosts, and the ssh settings that reach them.
pub struct SimNet {
    pub hosts: Vec<SimHost>,
    /// The ssh config to give swarm (`SWARM_SSH_CONFIG`).
    pub ssh_config: PathBuf,
}

impl SimNet {
    /// `n` hosts, `h1` to `hN`, for `env`.
    pub fn start(env: &TestEnv, n: usize) -> Option<SimNet> {
        let root = nix::unistd::geteuid().is_root();
        if !require("root (for network and mount namespaces)", root)
            || !require("sshd (openssh-server)", Path::new(SSHD).exists())
        {
            return None;
        }
        let ssh = env.dir.path().join("ssh");
        std::fs::create_dir_all(&ssh).unwrap();
        keygen(&ssh.join("id"));
        let ssh_config = ssh.join("config");
        std::fs::write(
            &ssh_config,
            format!(
                "Host *\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n",
                ssh.join("id").display(),
                ssh.join("known_hosts").display()
            ),
        )
        .unwrap();
        let public = std::fs::read_to_string(ssh.join("id.pub")).unwrap();
        let hosts = (1..=n)
            .map(|i| SimHost::start(env, &format!("h{i}"), &public))
            .collect();
        Some(SimNet { hosts, ssh_config })
    }

    /// Records every host with `swarm host add`, its swarm the test's, its project
    /// directory `/run/host/project` (made here).
    pub fn add_all(&self, env: &TestEnv) {
        for h in &self.hosts {
            std::fs::create_dir_all(h.dir.join("project")).unwrap();
            env.run(&[
                "host",
                "add",
                &h.name,
                &format!("root@{}", h.address),
                "--swarm-bin",
                "/run/host-bin/swarm",
                "--dir",
                "/run/host/project",
            ])
            .success();
        }
    }
}

impl SimHost {
    fn start(env: &TestEnv, name: &str, authorized: &str) -> SimHost {
        let dir = env.dir.path().join("hosts").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut holder = Command::new("unshare")
            .args([
                "--net",
                "--mount",
                "--uts",
                "--propagation",
                "private",
                "--",
                "sh",
                "-c",
                SETUP,
            ])
            .env("HOST_DIR", &dir)
            .env("HOST_NAME", format!("swarm-test-{name}"))
            .env("SWARM_BIN", SWARM)
            .env("ENV_DIR", env.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start unshare");
        let mut ready = String::new();
        std::io::BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut ready)
            .unwrap();
        assert_eq!(ready.trim(), "ready", "the host's namespaces were not made");
        let (subnet, veth) = free_subnet();
        let (gateway, address) = (format!("{subnet}.1"), format!("{subnet}.2"));
        let pid = holder.id().to_string();
        sh(&[
            "ip", "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &pid,
        ]);
        sh(&["ip", "addr", "add", &format!("{gateway}/24"), "dev", &veth]);
        sh(&["ip", "link", "set", &veth, "up"]);
        let inside = |argv: &[&str]| {
            let mut all = vec!["nsenter", "-t", &pid, "-n", "--"];
            all.extend_from_slice(argv);
            sh(&all);
        };
        inside(&["ip", "addr", "add", &format!("{address}/24"), "dev", "eth0"]);
        inside(&["ip", "link", "set", "eth0", "up"]);
        inside(&["ip", "link", "set", "lo", "up"]);
        // Every address of the lead's machine (another host's link too) is through it.
        inside(&["ip", "route", "add", "default", "via", &gateway]);
        let mut host = SimHost {
            name: name.to_owned(),
            address,
            gateway,
            dir,
            veth,
            holder,
            sshd: None,
        };
        host.start_sshd(authorized);
        host
    }

    fn start_sshd(&mut self, authorized: &str) {
        keygen(&self.dir.join("host_key"));
        std::fs::write(self.dir.join("authorized_keys"), authorized).unwrap();
        std::fs::write(
            self.dir.join("sshd_config"),
            format!(
                "ListenAddress {}\nPort 22\nHostKey /run/host/host_key\nAuthorizedKeysFile /run/host/authorized_keys\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\n",
                self.address
            ),
        )
        .unwrap();
        let log = std::fs::File::create(self.dir.join("sshd.log")).unwrap();
        let pid = self.holder.id().to_string();
        let sshd = Command::new("nsenter")
            .args(["-t", &pid, "-n", "-m", "-u", "--", SSHD, "-D", "-e", "-f"])
            .arg("/run/host/sshd_config")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start sshd");
        self.sshd = Some(sshd);
        let at: SocketAddr = format!("{}:22", self.address).parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&at, Duration::from_millis(200)).is_err() {
            assert!(
                Instant::now() < deadline,
                "sshd of {} did not listen: {}",
                self.name,
                std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs `argv` on the host, as its own processes see it (its network and mounts).
    pub fn exec(&self, argv: &[&str]) -> Output {
        let pid = self.holder.id().to_string();
        Command::new("nsenter")
            .args(["-t", &pid, "-n", "-m", "-u", "--"])
            .args(argv)
            .stdin(Stdio::null())
            .output()
            .expect("run nsenter")
    }

    /// Cuts the host off the network (its link down), as a failed switch would.
    pub fn cut(&self) {
        sh(&["ip", "link", "set", &self.veth, "down"]);
    }

    /// Puts it back.
    pub fn restore(&self) {
        sh(&["ip", "link", "set", &self.veth, "up"]);
    }
}

impl Drop for SimHost {
    fn drop(&mut self) {
        // Everything on the host (its sshd, its tmux, its teammates) goes with it: every
        // process in its network namespace (the pids are the machine's: only those).
        let ns = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/net")).ok();
        let mine = ns(&self.holder.id().to_string());
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(pid) = name.parse::<i32>() else {
                continue;
            };
            if mine.is_some() && ns(&name) == mine && pid != self.holder.id() as i32 {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        if let Some(mut s) = self.sshd.take() {
            let _ = s.kill();
            let _ = s.wait();
        }
        let _ = self.holder.kill();
        let _ = self.holder.wait();
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .output();
    }
}

/// Runs a setup command, which must succeed.
fn sh(argv: &[&str]) {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .expect(argv[0]);
    assert!(
        out.status.success(),
        "`{}` failed: {}",
        argv.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An ed25519 key pair at `path` and `path.pub`, without a passphrase.
fn keygen(path: &Path) {
    sh(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-C",
        "swarm-test",
        "-f",
        path.to_str().unwrap(),
    ]);
}

/// A /24 of 10.64.0.0/10 no interface here uses, and a veth name for it.
fn free_subnet() -> (String, String) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let used = String::from_utf8_lossy(
        &Command::new("ip")
            .args(["-o", "addr"])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    loop {
        let n = N.fetch_add(1, Ordering::Relaxed);
        let (b, c) = (64 + fastrand::u8(..64), fastrand::u8(..));
        let subnet = format!("10.{b}.{c}");
        if used.contains(&format!("{subnet}.")) {
            continue;
        }
        return (subnet, format!("sw{}x{n}", std::process::id() % 100_000));
    }
}
