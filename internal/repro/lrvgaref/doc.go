// Package lrvgaref holds the references the L-RVGA experiments of paper 002 score and compare the filter against:
// the exact posterior of Bayesian linear regression and its KL (LinearPosterior), the sampled reverse KL of
// logistic regression (LogisticKL), the dense full-covariance Kalman filter and R-VGA steps (Dense) and the batch
// Laplace approximation (Laplace). They take O(d²) memory or more, for tests, examples and reproductions; the
// library method is algos/lrvga.
package lrvgaref
