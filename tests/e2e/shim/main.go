// containerd-shim-runsc-v1 for this e2e node: starts gVisor's shim (gvisor-containerd-shim-runsc-v1,
// next to this binary) the way containerd's shim protocol asks, and execs it for every other action.
//
// Why: gVisor's own `start` sets the shim's oom_score_adj to -999, which needs CAP_SYS_RESOURCE; this
// machine's bounding set lacks it (EACCES, "failed to set OOM Score on shim"), so every gVisor pod
// sandbox failed. It also prints its address as JSON (containerd >= 1.7), while Debian's containerd
// 1.6 reads a bare address. This `start` does what the protocol needs and nothing else: listen on a
// unix socket, hand it to the shim daemon as fd 3 in the bundle directory, write `address` and
// `shim.pid` there, print the address. Standard library only.
package main

import (
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
)

const socketDir = "/run/mcpexec-e2e/s"

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mcpexec shim start: "+format+"\n", args...)
	os.Exit(1)
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if (a == "-"+name || a == "--"+name) && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func main() {
	self, err := os.Executable()
	if err != nil {
		fail("%v", err)
	}
	real := filepath.Join(filepath.Dir(self), "gvisor-containerd-shim-runsc-v1")
	args := os.Args[1:]
	if len(args) == 0 || args[len(args)-1] != "start" {
		if err := syscall.Exec(real, append([]string{real}, args...), os.Environ()); err != nil {
			fail("exec %s: %v", real, err)
		}
	}
	daemonArgs := []string{
		"-namespace", flagValue(args, "namespace"),
		"-address", flagValue(args, "address"),
		"-id", flagValue(args, "id"),
	}
	for _, a := range args {
		if a == "-debug" || a == "--debug" {
			daemonArgs = append(daemonArgs, "-debug")
		}
	}
	if publish := flagValue(args, "publish-binary"); publish != "" {
		daemonArgs = append(daemonArgs, "-publish-binary", publish)
	}
	sum := sha256.Sum256([]byte(filepath.Join(flagValue(args, "address"), flagValue(args, "namespace"), flagValue(args, "id"))))
	if err := os.MkdirAll(socketDir, 0o711); err != nil {
		fail("%v", err)
	}
	path := filepath.Join(socketDir, fmt.Sprintf("%x", sum))
	address := "unix://" + path
	_ = os.Remove(path)
	listener, err := net.Listen("unix", path)
	if err != nil {
		fail("listen %s: %v", path, err)
	}
	socket, err := listener.(*net.UnixListener).File()
	if err != nil {
		fail("%v", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		fail("%v", err)
	}
	cmd := exec.Command(real, daemonArgs...)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.ExtraFiles = []*os.File{socket}
	if err := cmd.Start(); err != nil {
		_ = os.Remove(path)
		fail("start %s: %v", real, err)
	}
	for name, value := range map[string]string{"shim.pid": strconv.Itoa(cmd.Process.Pid), "address": address} {
		if err := os.WriteFile(name, []byte(value), 0o644); err != nil {
			_ = cmd.Process.Kill()
			_ = os.Remove(path)
			fail("write %s: %v", name, err)
		}
	}
	fmt.Print(address)
}
