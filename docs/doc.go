// Package docs holds lockstep's documentation; its test runs every YAML
// example of scenario.md.
package docs
