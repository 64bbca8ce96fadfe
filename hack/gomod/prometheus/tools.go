//go:build tools

// Package tools pins the Prometheus server for this module; it is never compiled.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
