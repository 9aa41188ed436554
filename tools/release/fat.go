package main

import (
	"debug/macho"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// fatAlign is the alignment of each slice in a universal binary: 2^14, the page size
// of arm64 Macs (and a multiple of x86-64's), as lipo aligns arm64 slices.
const fatAlign = 14

// errNoSlices is writeFat's error for nothing to join.
var errNoSlices = errors.New("no binaries to join")

// writeFat joins thin Mach-O executables (one per architecture) into one universal
// ("fat") binary at out, as lipo -create does: a big-endian header naming each
// slice's CPU type, offset, size and alignment, then the slices unchanged (so the
// code signature each carries stays valid).
func writeFat(out string, thin []string) error {
	if len(thin) == 0 {
		return errNoSlices
	}
	type slice struct {
		cpu, sub uint32
		data     []byte
	}
	var slices []slice
	for _, path := range thin {
		f, err := macho.Open(path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		cpu, sub := uint32(f.Cpu), f.SubCpu
		f.Close()
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		slices = append(slices, slice{cpu, sub, data})
	}
	const headerSize, archSize = 8, 20
	offset := uint64(headerSize + archSize*len(slices))
	var header []byte
	header = binary.BigEndian.AppendUint32(header, macho.MagicFat)
	header = binary.BigEndian.AppendUint32(header, uint32(len(slices)))
	offsets := make([]uint64, len(slices))
	for i, s := range slices {
		offset = (offset + 1<<fatAlign - 1) &^ (1<<fatAlign - 1)
		offsets[i] = offset
		if offset+uint64(len(s.data)) > 1<<32-1 {
			return fmt.Errorf("%s: a universal binary over 4 GiB", out)
		}
		header = binary.BigEndian.AppendUint32(header, s.cpu)
		header = binary.BigEndian.AppendUint32(header, s.sub)
		header = binary.BigEndian.AppendUint32(header, uint32(offset))
		header = binary.BigEndian.AppendUint32(header, uint32(len(s.data)))
		header = binary.BigEndian.AppendUint32(header, fatAlign)
		offset += uint64(len(s.data))
	}
	buf := make([]byte, offset)
	copy(buf, header)
	for i, s := range slices {
		copy(buf[offsets[i]:], s.data)
	}
	return os.WriteFile(out, buf, 0o755)
}
