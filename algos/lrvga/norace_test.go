//go:build !race

package lrvga

const raceEnabled = false
