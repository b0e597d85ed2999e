package main

import "syscall"

// machineMemory is the machine's total RAM in bytes (0 when unknown: no
// limit).
func machineMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
