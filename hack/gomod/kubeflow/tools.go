//go:build tools

// Package tools pins Kubeflow's training-operator (v1) for this module; it is never compiled.
package tools

import _ "github.com/kubeflow/training-operator/cmd/training-operator.v1"
