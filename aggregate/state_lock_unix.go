//go:build unix

package aggregate

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockState takes an exclusive lock on path+".lock" for as long as the
// returned file stays open: two members pointed at one state file would
// overwrite each other's votes. The kernel drops the lock when the process
// dies, so a member killed with SIGKILL does not keep its successor out.
func lockState(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("aggregate: state file lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by another member", ErrStateInUse, path)
		}
		return nil, fmt.Errorf("aggregate: state file lock: %w", err)
	}
	return f, nil
}
