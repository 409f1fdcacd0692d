package registry

import (
	"bytes"
	"errors"
	"os"
	"strconv"
)

// procStart is process pid's creation stamp on Linux: field 22 of /proc/PID/stat (starttime,
// clock ticks after boot), which a later process reusing the pid cannot share.
func procStart(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatStart(b)
}

// parseStatStart reads starttime from a /proc/PID/stat line. The command name (field 2) is in
// parentheses and may hold spaces and ')', so the fields are counted after its last ')'.
func parseStatStart(b []byte) (int64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no command name in /proc stat")
	}
	// After ") " come field 3 (state) onwards; starttime is field 22, the 20th of those.
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return 0, errors.New("short /proc stat line")
	}
	return strconv.ParseInt(string(f[19]), 10, 64)
}
