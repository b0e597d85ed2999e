//go:build !linux

package main

// machineMemory is 0 (unknown: no limit) outside Linux.
func machineMemory() int64 { return 0 }
