"""R70: the real console (attach RUN) with a SIGTERM sent at one moment of its start or end."""
import os, signal, sys, time
mode, base, run = sys.argv[1], sys.argv[2], sys.argv[3]
from textual.drivers import linux_driver
from moeconsole.console import app as appmod
log = open("/tmp/r70_wrap.log", "a")
orig_start = linux_driver.LinuxDriver.start_application_mode
def start(self):
    orig_start(self)
    log.write(f"{time.monotonic():.3f} application mode on\n"); log.flush()
    if mode == "start":
        os.kill(os.getpid(), signal.SIGTERM)
linux_driver.LinuxDriver.start_application_mode = start
orig_stop = linux_driver.LinuxDriver.stop_application_mode
def stop(self):
    log.write(f"{time.monotonic():.3f} application mode stopping\n"); log.flush()
    orig_stop(self)
linux_driver.LinuxDriver.stop_application_mode = stop
orig_leave = appmod.MoeConsole._leave_on_signals
def leave(self, install):
    orig_leave(self, install)
    log.write(f"{time.monotonic():.3f} handlers {'installed' if install else 'removed'}\n"); log.flush()
    if mode == "end" and not install:
        os.kill(os.getpid(), signal.SIGTERM)
    if mode in ("measure", "end") and install:
        self.set_timer(2.0, lambda: self.exit(0))
appmod.MoeConsole._leave_on_signals = leave
from moeconsole.console import cli
sys.exit(cli.main(["attach", run, "--runs-dir", base]))
