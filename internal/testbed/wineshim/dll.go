// Package wineshim writes the one Windows DLL that Debian bookworm's Wine 8.0
// lacks for running Go programs: bcryptprimitives.dll. Since Go 1.22 the
// Windows runtime loads it at start (ProcessPrng, its random source) and throws
// "bcryptprimitives.dll not found" without it; Wine ships it from 9.x on. The
// DLL written here holds no code: it is a PE32+ image whose only export is a
// forwarder, ProcessPrng → advapi32.SystemFunction036 (RtlGenRandom), which has
// the same calling shape on amd64 (buffer, length; returns a boolean the Go
// runtime reads as a byte). It exists only for the CI's Wine runs (.ci/wine-tests);
// nothing in dual-proxy's own binaries uses it.
package wineshim

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Forward is one export of a forwarder DLL: Name in the DLL resolves to Target,
// written "module.Function" (PE/COFF specification, "Export Address Table":
// an export whose RVA points inside the export section is a forwarder string).
type Forward struct {
	Name, Target string
}

// BcryptPrimitives returns the bcryptprimitives.dll image for Wine 8.0: the
// export ProcessPrng forwarded to advapi32.SystemFunction036.
func BcryptPrimitives() []byte {
	dll, err := ForwarderDLL("bcryptprimitives.dll", []Forward{{"ProcessPrng", "advapi32.SystemFunction036"}})
	if err != nil {
		panic(err) // fixed input; ForwarderDLL fails only on empty or duplicate names
	}
	return dll
}

// PE32+ layout constants (PE/COFF specification, "Optional Header").
const (
	fileAlign    = 0x200
	sectionAlign = 0x1000
	sectionRVA   = sectionAlign // the one section, right after the headers
	headerSize   = 0x40 + 4 + 20 + 240 + 40
	imageBase    = 0x7ff7_0000_0000
)

// ForwarderDLL returns a PE32+ (amd64) DLL named dllName whose exports are the
// forwarders fw, sorted by name as the loader's binary search requires. The
// image has one read-only section (.edata) and no code, entry point or
// relocations. Errors: no exports, an empty name or target, a repeated name.
func ForwarderDLL(dllName string, fw []Forward) ([]byte, error) {
	if len(fw) == 0 {
		return nil, fmt.Errorf("wineshim: %s: no exports", dllName)
	}
	fw = append([]Forward(nil), fw...)
	sort.Slice(fw, func(i, j int) bool { return fw[i].Name < fw[j].Name })
	for i, f := range fw {
		if f.Name == "" || f.Target == "" {
			return nil, fmt.Errorf("wineshim: %s: export %d: empty name or target", dllName, i)
		}
		if i > 0 && fw[i-1].Name == f.Name {
			return nil, fmt.Errorf("wineshim: %s: export %q repeated", dllName, f.Name)
		}
	}
	edata := exportSection(dllName, fw)
	raw := align(len(edata), fileAlign)
	img := make([]byte, fileAlign+raw)
	writeHeaders(img, len(edata), raw)
	copy(img[fileAlign:], edata)
	return img, nil
}

// exportSection lays out the export directory (40 bytes), the address, name
// and ordinal tables, then the strings; every RVA is relative to the image.
func exportSection(dllName string, fw []Forward) []byte {
	n := len(fw)
	eat := 40
	names := eat + 4*n
	ords := names + 4*n
	strs := ords + 2*n
	var tail []byte
	str := func(s string) uint32 {
		off := uint32(sectionRVA + strs + len(tail))
		tail = append(append(tail, s...), 0)
		return off
	}
	out := make([]byte, strs)
	le := binary.LittleEndian
	le.PutUint32(out[12:], str(dllName)) // Name RVA
	le.PutUint32(out[16:], 1)            // ordinal base
	le.PutUint32(out[20:], uint32(n))    // NumberOfFunctions
	le.PutUint32(out[24:], uint32(n))    // NumberOfNames
	le.PutUint32(out[28:], uint32(sectionRVA+eat))
	le.PutUint32(out[32:], uint32(sectionRVA+names))
	le.PutUint32(out[36:], uint32(sectionRVA+ords))
	for i, f := range fw {
		le.PutUint32(out[names+4*i:], str(f.Name))
		le.PutUint32(out[eat+4*i:], str(f.Target)) // inside the export range: a forwarder
		le.PutUint16(out[ords+2*i:], uint16(i))
	}
	return append(out, tail...)
}

// writeHeaders fills the DOS stub header, the COFF header, the PE32+ optional
// header and the one section header; size is the export data's length, raw
// its file-aligned length.
func writeHeaders(img []byte, size, raw int) {
	le := binary.LittleEndian
	copy(img, "MZ")
	le.PutUint32(img[0x3c:], 0x40) // e_lfanew
	copy(img[0x40:], "PE\x00\x00")
	coff := img[0x44:]
	le.PutUint16(coff[0:], 0x8664) // IMAGE_FILE_MACHINE_AMD64
	le.PutUint16(coff[2:], 1)      // one section
	le.PutUint16(coff[16:], 240)   // SizeOfOptionalHeader (PE32+, 16 directories)
	le.PutUint16(coff[18:], 0x2022)
	// EXECUTABLE_IMAGE | LARGE_ADDRESS_AWARE | DLL

	opt := coff[20:]
	le.PutUint16(opt[0:], 0x20b) // PE32+
	le.PutUint32(opt[8:], uint32(raw))
	le.PutUint64(opt[24:], imageBase)
	le.PutUint32(opt[32:], sectionAlign)
	le.PutUint32(opt[36:], fileAlign)
	le.PutUint16(opt[40:], 6) // MajorOperatingSystemVersion
	le.PutUint16(opt[48:], 6) // MajorSubsystemVersion
	le.PutUint32(opt[56:], uint32(sectionRVA+align(size, sectionAlign)))
	le.PutUint32(opt[60:], fileAlign) // SizeOfHeaders
	le.PutUint16(opt[68:], 3)         // IMAGE_SUBSYSTEM_WINDOWS_CUI
	le.PutUint64(opt[72:], 0x100000)  // stack reserve
	le.PutUint64(opt[80:], 0x1000)    // stack commit
	le.PutUint64(opt[88:], 0x100000)  // heap reserve
	le.PutUint64(opt[96:], 0x1000)    // heap commit
	le.PutUint32(opt[108:], 16)       // NumberOfRvaAndSizes
	le.PutUint32(opt[112:], sectionRVA)
	le.PutUint32(opt[116:], uint32(size)) // directory 0: exports

	sec := opt[240:]
	copy(sec[0:8], ".edata")
	le.PutUint32(sec[8:], uint32(size))
	le.PutUint32(sec[12:], sectionRVA)
	le.PutUint32(sec[16:], uint32(raw))
	le.PutUint32(sec[20:], fileAlign)
	le.PutUint32(sec[36:], 0x40000040) // INITIALIZED_DATA | MEM_READ
}

func align(n, a int) int { return (n + a - 1) / a * a }
