package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The control token of an instance's live settings is kept in
// PID.control (0600) beside its entry, like the pool token, so the CLI of
// the same user finds it (`dual-proxy settings`) and nobody else can read
// it.

// controlSuffix is the control token file's suffix.
const controlSuffix = ".control"

// SetControlToken writes token as the entry's control token; Remove
// deletes it. Errors name the path.
func (r *Registration) SetControlToken(token string) error {
	if r == nil {
		return nil
	}
	path := strings.TrimSuffix(r.json, ".json") + controlSuffix
	if err := writeFile(path, []byte(token)); err != nil {
		return err
	}
	r.control = path
	return nil
}

// ControlToken reads e's control token ("" when it has none: an instance
// older than the settings API). The file must be a regular file of this
// user; a symlink is refused.
func (e Entry) ControlToken() (string, error) {
	if e.dir == "" {
		return "", nil
	}
	b, err := readOwnFile(filepath.Join(e.dir, strconv.Itoa(e.PID)+controlSuffix))
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("control token of pid %d: %w", e.PID, err)
	}
	return strings.TrimSpace(string(b)), nil
}
