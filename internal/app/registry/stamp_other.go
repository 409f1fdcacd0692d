//go:build !linux && !darwin && !windows

package registry

import "errors"

// procStart: no creation time is read on this OS, so entries are trusted by pid alone.
func procStart(int) (int64, error) { return 0, errors.New("process creation time unknown on this OS") }
