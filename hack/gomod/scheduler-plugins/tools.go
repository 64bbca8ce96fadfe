//go:build tools

// Package tools pins the scheduler-plugins scheduler (kube-scheduler with the Coscheduling plugin and the
// others of sigs.k8s.io/scheduler-plugins registered) for this module; it is never compiled.
package tools

import _ "sigs.k8s.io/scheduler-plugins/cmd/scheduler"
