package yamlx_test

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/internal/yamlx"
)

func ExampleDecode() {
	type Link struct {
		Rate  yamlx.Rate     `yaml:"rate" lockstep:"required"`
		Delay yamlx.Duration `yaml:"delay"`
	}
	type Scenario struct {
		Seed  int64  `yaml:"seed"`
		Links []Link `yaml:"links"`
	}

	var s Scenario
	err := yamlx.Decode("example.yaml", []byte(`
seed: 7
links:
  - {rate: 100Gbps, delay: 1us}
  - {rate: 2.5Gbps, delay: 500ns}
`), &s)
	fmt.Println(err, s.Links[1].Rate, s.Links[1].Delay.Time().Nanoseconds())

	err = yamlx.Decode("example.yaml", []byte(`
seed: 7
links:
  - {rate: 100Gbps, delay: 1us}
  - {rate: 40Gbps, dealy: 2us}
`), &s)
	fmt.Println(err)

	err = yamlx.Decode("example.yaml", []byte(`
links:
  - delay: 1us
`), &s)
	fmt.Println(err)
	// Output:
	// <nil> 2.5Gbps 500
	// example.yaml:5:20: links[1].dealy: unknown field (known: rate, delay)
	// example.yaml:3: links[0]: missing required field "rate"
}
