//! Simulated hosts, for the tests of teammates on other machines: each a Linux network
//! namespace with its own veth address, its own `sshd` (Debian's openssh-server, on port 22
//! of its own address, key-only, with a key made for the test), its own PID namespace (a
//! pid read on the lead's side is never one of a host's processes) and its own filesystem
//! view, a mount namespace where the test's directory (the lead's root, home and project),
//! `/tmp` and `/run` are private and empty: a remote teammate that reads a local file by
//! mistake fails its test. Its user's home, `/root`, is its own (the test's
//! `hosts/<name>/home`, [`SimHost::home`]), so what a user keeps there (`~/.pgpass`,
//! `~/.postgresql/root.crt`) is the host's. The host's other files are in `/run/host` (the
//! test's `hosts/<name>` directory), and swarm's binary at `/run/host-bin/swarm`.
//!
//! Only the namespaces' addresses are used: one /24 of 10.64.0.0/10 per network, on a
//! bridge of its own (a switch: hosts reach each other without the machine routing), the
//! lead's side `.1`, the hosts `.2` on. Needs root, `unshare`, `nsenter`, `ip` and `sshd`;
//! without them [`SimNet::start`] says so and returns `None` (a failure under `CI=true`).

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
mount --bind /run/host/home /root
mount -t tmpfs tmpfs /tmp
echo ready
exec python3 -c "$REAPER""#;

/// The host's init (pid 1 of its PID namespace), as a real host's: it reaps whatever is
/// left to it (a teammate whose tmux server went), so a process that ended is gone.
const REAPER: &str = r#"import os, time
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.2)"#;

/// One simulated host.
pub struct SimHost {
    pub name: String,
    /// Its address, on its side of the veth pair.
    pub address: String,
    /// The lead's machine's address on the network: where the host reaches it.
    pub gateway: String,
    /// Its own files, seen there as `/run/host`.
    pub dir: PathBuf,
    /// Its user's home, seen there as `/root`.
    pub home: PathBuf,
    veth: String,
    holder: Child,
    sshd: Option<Child>,
}

/// Simulated hosts, and the ssh settings that reach them.
pub struct SimNet {
    pub hosts: Vec<SimHost>,
    /// The ssh config to give swarm (`SWARM_SSH_CONFIG`).
    pub ssh_config: PathBuf,
    /// The lead's machine's address on the network (every host's gateway).
    pub gateway: String,
    bridge: String,
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
        let (subnet, bridge) = free_subnet();
        let gateway = format!("{subnet}.1");
        sh(&["ip", "link", "add", &bridge, "type", "bridge"]);
        // An address of its own: else the bridge takes its lowest port's, which changes as
        // hosts join, and a host that asked for the gateway's before finds nobody there.
        let mac = format!(
            "02:5e:{:02x}:{:02x}:{:02x}:01",
            fastrand::u8(..),
            fastrand::u8(..),
            fastrand::u8(..)
        );
        sh(&["ip", "link", "set", &bridge, "address", &mac]);
        sh(&[
            "ip",
            "addr",
            "add",
            &format!("{gateway}/24"),
            "dev",
            &bridge,
        ]);
        sh(&["ip", "link", "set", &bridge, "up"]);
        let mut net = SimNet {
            hosts: Vec::new(),
            ssh_config,
            gateway,
            bridge,
        };
        for i in 1..=n {
            let link = Link {
                bridge: &net.bridge,
                gateway: &net.gateway,
                address: format!("{subnet}.{}", i + 1),
                veth: format!("{}v{i}", net.bridge),
            };
            net.hosts
                .push(SimHost::start(env, &format!("h{i}"), &public, link));
        }
        Some(net)
    }

    /// The ssh key and config that reach the hosts, copied to `host`'s own files (as
    /// `/run/host/ssh`), for a lead that runs there; the config's path there.
    pub fn give_ssh_to(&self, host: &SimHost) -> String {
        let ssh = self.ssh_config.parent().unwrap();
        let there = host.dir.join("ssh");
        std::fs::create_dir_all(&there).unwrap();
        for file in ["id", "id.pub"] {
            std::fs::copy(ssh.join(file), there.join(file)).unwrap();
        }
        let config = std::fs::read_to_string(&self.ssh_config)
            .unwrap()
            .replace(&ssh.display().to_string(), "/run/host/ssh");
        std::fs::write(there.join("config"), config).unwrap();
        "/run/host/ssh/config".to_owned()
    }

    /// Records every host with `swarm host add`, its swarm the test's, its project
    /// directory `/run/host/project` (made here).
    pub fn add_all(&self, env: &TestEnv) {
        self.add_all_as(env, &[]);
    }

    /// [`SimNet::add_all`], host `i` given database role `roles[i]` where there is one.
    pub fn add_all_as(&self, env: &TestEnv, roles: &[String]) {
        for (i, h) in self.hosts.iter().enumerate() {
            std::fs::create_dir_all(h.dir.join("project")).unwrap();
            let target = format!("root@{}", h.address);
            let mut args = vec![
                "host",
                "add",
                &h.name,
                &target,
                "--swarm-bin",
                "/run/host-bin/swarm",
                "--dir",
                "/run/host/project",
            ];
            if let Some(role) = roles.get(i) {
                args.extend(["--db-role", role]);
            }
            env.run(&args).success();
        }
    }
}

impl Drop for SimNet {
    fn drop(&mut self) {
        // The hosts first (each takes its veth), then the switch.
        self.hosts.clear();
        let _ = Command::new("ip")
            .args(["link", "del", &self.bridge])
            .output();
    }
}

/// Where a host plugs into its network.
struct Link<'a> {
    bridge: &'a str,
    gateway: &'a str,
    address: String,
    veth: String,
}

impl SimHost {
    fn start(env: &TestEnv, name: &str, authorized: &str, link: Link) -> SimHost {
        let dir = env.dir.path().join("hosts").join(name);
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut holder = Command::new("unshare")
            .args([
                "--net",
                "--mount",
                "--uts",
                "--pid",
                "--fork",
                "--mount-proc",
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
            .env("REAPER", REAPER)
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
        let Link {
            bridge,
            gateway,
            address,
            veth,
        } = link;
        let pid = inner_pid(&holder).to_string();
        sh(&[
            "ip", "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &pid,
        ]);
        sh(&["ip", "link", "set", &veth, "master", bridge]);
        sh(&["ip", "link", "set", &veth, "up"]);
        let inside = |argv: &[&str]| {
            let mut all = vec!["nsenter", "-t", &pid, "-n", "--"];
            all.extend_from_slice(argv);
            sh(&all);
        };
        inside(&["ip", "addr", "add", &format!("{address}/24"), "dev", "eth0"]);
        inside(&["ip", "link", "set", "eth0", "up"]);
        inside(&["ip", "link", "set", "lo", "up"]);
        // Every address of the lead's machine is through it.
        inside(&["ip", "route", "add", "default", "via", gateway]);
        let mut host = SimHost {
            name: name.to_owned(),
            address,
            gateway: gateway.to_owned(),
            dir,
            home,
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
        let pid = inner_pid(&self.holder).to_string();
        let sshd = Command::new("nsenter")
            .args([
                "-t", &pid, "-n", "-m", "-u", "-p", "--", SSHD, "-D", "-e", "-f",
            ])
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
        self.command(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .output()
            .expect("run nsenter")
    }

    /// `program` to run on the host, as [`SimHost::exec`] runs it, to be given its
    /// arguments and environment.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new("nsenter");
        let pid = inner_pid(&self.holder).to_string();
        cmd.args(["-t", &pid, "-n", "-m", "-u", "-p", "--"])
            .arg(program);
        cmd
    }

    /// Whether the host's process `pid` (as the host numbers it) still runs: it exists
    /// there, and has not ended (a zombie has).
    pub fn alive(&self, pid: i32) -> bool {
        let stat = self.exec(&["cat", &format!("/proc/{pid}/stat")]);
        let stat = String::from_utf8_lossy(&stat.stdout);
        // `pid (comm) S ...`: the state follows the last parenthesis.
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        state.is_some_and(|s| !s.starts_with('Z'))
    }

    /// `kill -9` of the host's process `pid`, there.
    pub fn kill9(&self, pid: i32) {
        let out = self.exec(&["kill", "-9", &pid.to_string()]);
        assert!(out.status.success(), "{out:?}");
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

/// The host's first process (its PID namespace's init), as this machine numbers it: the
/// child `unshare --fork` made, whose namespaces are all the host's.
fn inner_pid(holder: &Child) -> u32 {
    let pid = holder.id();
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .expect("read the host's first process");
    children
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("the host has its first process")
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

/// A /24 of 10.64.0.0/10 no interface here uses, and a bridge name for it.
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
        return (subnet, format!("swb{}x{n}", std::process::id() % 100_000));
    }
}
