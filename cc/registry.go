package cc

import "fmt"

// Config selects and parameterises the modules of one flow.
type Config struct {
	// CC names the Controller: "reno".
	CC string
	// Recovery names the Recovery: "reno" (cumulative ACK, 3 dup ACKs).
	Recovery string
	// MSS is the payload of a full segment in bytes.
	MSS int64
	// InitCwnd is the initial window in segments (RFC 6928 allows 10).
	InitCwnd int64
	// DupThresh is the duplicate-ACK threshold (RFC 5681: 3).
	DupThresh int
	// Strack parameterises the "strack" controller (nil: defaults).
	Strack *StrackConfig
}

// DefaultConfig is Reno with cumulative-ACK recovery, RFC 6928's initial
// window of 10 segments and 1460-byte segments.
func DefaultConfig() Config {
	return Config{CC: "reno", Recovery: "reno", MSS: 1460, InitCwnd: 10, DupThresh: 3}
}

// Validate checks the names and the numbers.
func (c *Config) Validate() error {
	if _, err := NewController(*c); err != nil {
		return err
	}
	if _, err := NewRecovery(*c, 1); err != nil {
		return err
	}
	return nil
}

// ControllerNames lists the congestion controls NewController knows.
var ControllerNames = []string{"reno", "strack", "strack-sim"}

// RecoveryNames lists the recoveries NewRecovery knows.
var RecoveryNames = []string{"reno", "strack"}

// NewController builds the Controller c names.
func NewController(c Config) (Controller, error) {
	if c.MSS <= 0 {
		return nil, fmt.Errorf("mss: must be positive, got %d", c.MSS)
	}
	if c.InitCwnd <= 0 {
		return nil, fmt.Errorf("init_cwnd: must be positive, got %d", c.InitCwnd)
	}
	switch c.CC {
	case "reno":
		return NewReno(c.MSS, c.InitCwnd), nil
	case "strack":
		sc := DefaultStrackConfig(c.MSS)
		if c.Strack != nil {
			sc = *c.Strack
		}
		if err := strackCheck(sc); err != nil {
			return nil, err
		}
		return NewStrack(sc, c.MSS, c.InitCwnd), nil
	case "strack-sim":
		return NewStrackSim(c.MSS, c.InitCwnd), nil
	}
	return nil, fmt.Errorf("cc: unknown congestion control %q (known: %v)", c.CC, ControllerNames)
}

// NewRecovery builds the Recovery c names for a flow of size bytes.
func NewRecovery(c Config, size uint64) (Recovery, error) {
	if c.MSS <= 0 {
		return nil, fmt.Errorf("mss: must be positive, got %d", c.MSS)
	}
	dt := c.DupThresh
	if dt == 0 {
		dt = 3
	}
	if dt < 1 {
		return nil, fmt.Errorf("dup_thresh: must be at least 1, got %d", c.DupThresh)
	}
	switch c.Recovery {
	case "reno":
		return NewRenoRecovery(c.MSS, size, dt), nil
	case "strack":
		return NewStrackRecovery(c.MSS, size), nil
	}
	return nil, fmt.Errorf("recovery: unknown loss recovery %q (known: %v)", c.Recovery, RecoveryNames)
}
