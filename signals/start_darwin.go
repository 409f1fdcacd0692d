package signals

import "os/exec"

// startChild starts cmd and waits for it in the background; the returned channel gets
// cmd.Wait's error once. macOS has no parent-death signal: a child of a launcher killed with
// SIGKILL keeps running (the one orphan macOS cannot prevent; Linux's startChild covers it).
func startChild(cmd *exec.Cmd) (<-chan error, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	wait := make(chan error, 1)
	go func() { wait <- cmd.Wait() }()
	return wait, nil
}
