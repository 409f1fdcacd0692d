package wineshim

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"testing"
)

// TestBcryptPrimitives reads the image back with debug/pe and walks its
// export directory as a loader would: ProcessPrng must be a forwarder to
// advapi32.SystemFunction036.
func TestBcryptPrimitives(t *testing.T) {
	t.Run("PLAT-1/forwarder-dll-parses-and-exports-processprng", func(t *testing.T) {
		img := BcryptPrimitives()
		f, err := pe.NewFile(bytes.NewReader(img))
		if err != nil {
			t.Fatal(err)
		}
		oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
		if !ok || f.Machine != pe.IMAGE_FILE_MACHINE_AMD64 || f.Characteristics&pe.IMAGE_FILE_DLL == 0 {
			t.Fatalf("not an amd64 PE32+ DLL: machine %#x characteristics %#x", f.Machine, f.Characteristics)
		}
		dir := oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_EXPORT]
		sec := f.Sections[0]
		data, err := sec.Data()
		if err != nil {
			t.Fatal(err)
		}
		at := func(rva uint32) []byte { return data[rva-sec.VirtualAddress:] }
		cstr := func(rva uint32) string { b := at(rva); return string(b[:bytes.IndexByte(b, 0)]) }
		le := binary.LittleEndian
		ed := at(dir.VirtualAddress)
		if got := cstr(le.Uint32(ed[12:])); got != "bcryptprimitives.dll" {
			t.Fatalf("DLL name %q", got)
		}
		if n := le.Uint32(ed[24:]); n != 1 {
			t.Fatalf("%d names, want 1", n)
		}
		name := cstr(le.Uint32(at(le.Uint32(ed[32:]))))
		ord := le.Uint16(at(le.Uint32(ed[36:])))
		fn := le.Uint32(at(le.Uint32(ed[28:]) + 4*uint32(ord)))
		if fn < dir.VirtualAddress || fn >= dir.VirtualAddress+dir.Size {
			t.Fatalf("export %s at RVA %#x is no forwarder (outside %#x+%#x)", name, fn, dir.VirtualAddress, dir.Size)
		}
		if name != "ProcessPrng" || cstr(fn) != "advapi32.SystemFunction036" {
			t.Fatalf("export %q → %q", name, cstr(fn))
		}
		if oh.SizeOfImage%oh.SectionAlignment != 0 || int(sec.Offset)%int(oh.FileAlignment) != 0 {
			t.Fatalf("misaligned image: size %#x offset %#x", oh.SizeOfImage, sec.Offset)
		}
	})
	t.Run("PLAT-1/bad-exports-are-errors", func(t *testing.T) {
		for _, fw := range [][]Forward{nil, {{"", "a.b"}}, {{"X", ""}}, {{"X", "a.b"}, {"X", "a.c"}}} {
			if _, err := ForwarderDLL("x.dll", fw); err == nil {
				t.Fatalf("ForwarderDLL(%v) succeeded", fw)
			}
		}
	})
}
