package rng

// fillKernel names the code that fills the bulk of a FillNormal or FillUniform call. Every kernel gives the same
// bits; useKernel picks the fastest the CPU has (fill_amd64.go), and the tests switch it to compare them.
type fillKernel uint8

const (
	kernelGo     fillKernel = iota // the Go loops of FillNormal and FillUniform
	kernelAVX2                     // fillNormalAVX2, fillUniformAVX2: four Philox blocks per step
	kernelAVX512                   // fillNormalAVX512, fillUniformAVX512: eight blocks per step, then kernelAVX2
)

func (k fillKernel) String() string {
	return [...]string{"go", "avx2", "avx512"}[k]
}

// useKernel is the kernel FillNormal and FillUniform use; never above bestKernel.
var useKernel = bestKernel
