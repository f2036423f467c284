//! Running a child as another unix user (`--run-as USER`, docs/CONTRACT.md
//! §19): looking the user up, and the raw calls that switch to it.
//!
//! As root, the child drops to the user's uid, gid and supplementary groups
//! between fork and exec. Otherwise it goes through `sudo -n -u USER`, which
//! the sudoers drop-in of `agentcron sudoers` allows without a password.
//!
//! Invariants: every `unsafe` of this file is a libc call with its buffers
//! owned here; the pre-exec hook makes only async-signal-safe calls
//! (setgroups, setgid, setuid) on values computed before the fork.

use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// How the switch to the user is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    /// This process is root: set the ids before exec.
    Ids,
    /// Through `sudo -n -u USER --`.
    Sudo,
}

/// The user a run executes as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups (the primary one included).
    pub groups: Vec<u32>,
    pub home: PathBuf,
    pub switch: Switch,
}

impl RunAs {
    /// Looks `name` up in the user database; the error is one line.
    pub fn lookup(name: &str) -> Result<RunAs, String> {
        let unknown = || format!("--run-as: there is no user '{}'", crate::text::escape(name));
        let c_name = CString::new(name).map_err(|_| unknown())?;
        let (uid, gid, home) = passwd(&c_name)?.ok_or_else(unknown)?;
        let groups = group_list(&c_name, gid);
        let switch = if effective_uid() == 0 {
            Switch::Ids
        } else {
            Switch::Sudo
        };
        Ok(RunAs {
            name: name.to_string(),
            uid,
            gid,
            groups,
            home,
            switch,
        })
    }

    /// Makes `command` switch to this user's ids before exec (as root).
    pub(super) fn set_ids(&self, command: &mut Command) {
        let (uid, gid) = (self.uid, self.gid);
        let groups: Vec<libc::gid_t> = self.groups.clone();
        // SAFETY: the hook runs between fork and exec and only makes the
        // async-signal-safe setgroups, setgid and setuid calls, on values
        // moved into it before the fork (no allocation happens in it).
        unsafe {
            command.pre_exec(move || {
                if libc::setgroups(groups.len() as _, groups.as_ptr()) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(uid) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

/// This process's effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail and has no preconditions.
    unsafe { libc::geteuid() }
}

/// The process at the other end of a connected Unix socket (as it was when
/// the connection was made: the connecting or listening process).
pub fn peer_pid(socket: &std::os::unix::net::UnixStream) -> io::Result<i32> {
    peer_credentials(socket).map(|cred| cred.pid)
}

fn peer_credentials(socket: &std::os::unix::net::UnixStream) -> io::Result<libc::ucred> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid, writable and sized for SO_PEERCRED.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    match rc {
        0 => Ok(cred),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Makes `command` start a session of its own before exec: sudo then has
/// no controlling terminal, so it never puts the supervisor behind a
/// pseudo-terminal (`use_pty`), which would cut its socket to the tick.
pub(super) fn new_session(command: &mut Command) {
    // SAFETY: the hook runs between fork and exec and only makes the
    // async-signal-safe setsid call.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
}

/// uid, gid and home of the user `name`, None when there is none.
fn passwd(name: &CStr) -> Result<Option<(u32, u32, PathBuf)>, String> {
    let mut size = 16 * 1024;
    loop {
        let mut buffer = vec![0 as libc::c_char; size];
        // SAFETY: an all-zero passwd is a valid value (plain data and null pointers).
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call; getpwnam_r writes the
        // strings into `buffer`, which outlives their use below.
        let rc = unsafe {
            libc::getpwnam_r(
                name.as_ptr(),
                &mut entry,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && size < 1 << 20 {
            size *= 4;
            continue;
        }
        if rc != 0 {
            return Err(format!(
                "--run-as: cannot read the user database: {}",
                io::Error::from_raw_os_error(rc)
            ));
        }
        if found.is_null() {
            return Ok(None);
        }
        // SAFETY: getpwnam_r succeeded, so pw_dir is null or a C string in `buffer`.
        let home = match entry.pw_dir.is_null() {
            true => PathBuf::from("/"),
            false => PathBuf::from(
                unsafe { CStr::from_ptr(entry.pw_dir) }
                    .to_string_lossy()
                    .into_owned(),
            ),
        };
        return Ok(Some((entry.pw_uid, entry.pw_gid, home)));
    }
}

/// The user's groups, its primary group first.
fn group_list(name: &CStr, gid: u32) -> Vec<u32> {
    let mut count: libc::c_int = 64;
    loop {
        let mut groups = vec![0 as libc::gid_t; count as usize];
        let asked = count;
        // SAFETY: `groups` holds `count` entries; getgrouplist writes at
        // most that many and sets `count` to how many there are.
        let rc = unsafe { libc::getgrouplist(name.as_ptr(), gid, groups.as_mut_ptr(), &mut count) };
        if rc >= 0 {
            groups.truncate(count.max(0) as usize);
            return groups;
        }
        if count <= asked {
            count = asked * 2;
        }
        if count > 65536 {
            return vec![gid];
        }
    }
}
