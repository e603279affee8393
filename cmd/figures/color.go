package main

import "image/color"

// plotColor is an opaque RGB colour.
type plotColor struct{ r, g, b uint8 }

// RGBA implements color.Color.
func (c plotColor) RGBA() (r, g, b, a uint32) {
	return color.RGBA{R: c.r, G: c.g, B: c.b, A: 255}.RGBA()
}
