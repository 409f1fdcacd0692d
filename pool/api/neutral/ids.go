package neutral

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns a fresh id with prefix; tests replace it for golden output.
var NewID = func(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
