//go:build slow

package fabric_test

import "testing"

// TestSetupMemory_K32 is the size: 8,192 hosts.
func TestSetupMemory_K32(t *testing.T) { testSetupMemory(t, 32) }
