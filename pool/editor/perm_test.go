package editor

import "testing"

func TestPermBits(t *testing.T) {
	for goos, want := range map[string]bool{"linux": true, "darwin": true, "windows": false} {
		t.Run("POOL-22/PLAT-1/perm-bits-"+goos, func(t *testing.T) {
			if got := permBits(goos); got != want {
				t.Fatalf("permBits(%s) = %v, want %v", goos, got, want)
			}
		})
	}
}
