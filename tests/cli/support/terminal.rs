//! A pseudo-terminal for the binary (Python's os and termios modules, the
//! system's python3), read to the very end.
//!
//! Linux may drop what a program wrote just before it exited when its
//! terminal hangs up with it (the pseudo-terminal's reader then sees EIO
//! first: `agentcron: error: ` arrived and the message after it did not).
//! So the terminal here never hangs up: the script keeps its own handle on
//! the terminal's far end, waits for the program to exit, writes a mark
//! through that handle, and reads until the mark comes back: everything
//! the program wrote came before it.
use super::TestEnv;
use std::process::Stdio;

/// What the terminal does besides showing what the program writes.
#[derive(Default)]
pub struct Terminal {
    /// The width it reports (unset: the kernel's default, 0 columns).
    pub columns: Option<u16>,
    /// stderr to /dev/null instead of the screen.
    pub stderr_to_null: bool,
    /// Once `code: ` is shown: types this back, or the six digits the
    /// screen showed when it is "echo".
    pub answer_code: Option<String>,
}

/// What the terminal showed (`\r\n` made `\n`) and the program's exit code.
pub struct Screen {
    pub text: String,
    pub code: i32,
}

const SCRIPT: &str = r#"
import fcntl, json, os, re, select, struct, sys, termios, time
opts, argv = json.loads(sys.argv[1]), sys.argv[2:]
MARK = b"<<end of the program's output>>"
main, far = os.openpty()
if opts["columns"] is not None:
    fcntl.ioctl(far, termios.TIOCSWINSZ, struct.pack("HHHH", 24, opts["columns"], 0, 0))
pid = os.fork()
if pid == 0:
    os.close(main)
    os.setsid()
    fcntl.ioctl(far, termios.TIOCSCTTY, 0)
    for fd in (0, 1, 2):
        os.dup2(far, fd)
    if opts["stderr_to_null"]:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    os.close(far)
    os.execv(argv[0], argv)
seen, answered, status, deadline = b"", opts["answer"] is None, None, time.time() + 60
while MARK not in seen:
    if time.time() > deadline:
        sys.exit("the program or its output did not end within 60 s: %r" % seen)
    if select.select([main], [], [], 0.05)[0]:
        seen += os.read(main, 65536)
    if not answered and b"code: " in seen:
        shown = re.search(rb"code: (\d{6})", seen)
        typed = shown.group(1) if opts["answer"] == "echo" and shown else opts["answer"].encode()
        os.write(main, typed + b"\n")
        answered = True
    if status is None:
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(raw)
            os.write(far, MARK)
print(status)
sys.stdout.write(seen[: seen.index(MARK)].decode(errors="replace"))
"#;

impl Terminal {
    /// Runs agentcron with `args` in `env`, on this terminal.
    pub fn run(&self, env: &TestEnv, args: &[&str]) -> Screen {
        let opts = serde_json::json!({
            "columns": self.columns,
            "stderr_to_null": self.stderr_to_null,
            "answer": self.answer_code,
        })
        .to_string();
        let out = env
            .command_through("python3", &["-c", SCRIPT, &opts], args)
            .stdin(Stdio::null())
            .output()
            .expect("python3 runs the pseudo-terminal");
        let all = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
        let problem = || {
            format!(
                "the terminal script failed: {all}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        };
        let (code, text) = all
            .split_once('\n')
            .unwrap_or_else(|| panic!("{}", problem()));
        Screen {
            code: code.parse().unwrap_or_else(|_| panic!("{}", problem())),
            text: text.to_string(),
        }
    }
}
