// A Gaussian-process model over a fixed, finite candidate set. Kernel: signal variance x
// Matern 5/2 with a length scale per ordered dimension x exp(-sum_c lambda_c [a_c != b_c]) over
// categorical dimensions, plus a noise term. Hyper-parameters maximise the log marginal
// likelihood (L-BFGS from several starts, analytic gradient). Solves go through the Cholesky
// factor; the posterior at every candidate is kept incrementally: V = L^-1 K(X, C) gains one
// row per observation (O(n m)), so an ask costs O(n m) between hyper-parameter fits.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <utility>
#include <vector>

namespace acceltune {

struct GpPoint {
  std::vector<double> ordered;  // in [0,1]
  std::vector<int> categorical;
};

struct GpHyper {
  std::vector<double> length;  // per ordered dim
  std::vector<double> lambda;  // per categorical dim
  double signal = 1.0;         // variance of the standardised objective
  double noise = 1e-2;         // noise variance
};

class CandidateGp {
 public:
  CandidateGp(size_t ordered_dims, size_t categorical_dims);

  size_t ordered_dims() const { return no_; }
  size_t categorical_dims() const { return nc_; }

  void set_candidates(std::vector<GpPoint> candidates);
  const std::vector<GpPoint>& candidates() const { return cands_; }

  // Observations, in order; `y` is standardised by the caller.
  void add_observation(const GpPoint& x);
  size_t observations() const { return obs_.size(); }

  // Fits the hyper-parameters to `y` (one value per observation) and rebuilds the factor and V.
  // Returns the best log marginal likelihood found.
  double fit(const Eigen::VectorXd& y, uint64_t seed, int starts);
  void set_hyper(const GpHyper& h);  // and rebuild
  const GpHyper& hyper() const { return hyper_; }

  // Log marginal likelihood of y under hyper-parameters h; its gradient with respect to the
  // log hyper-parameters (length..., lambda..., signal, noise) when `grad` is given.
  double log_marginal_likelihood(const GpHyper& h, const Eigen::VectorXd& y, std::vector<double>* grad) const;

  // Posterior mean and variance (of the latent function, without noise) at every candidate,
  // and the posterior mean at the observations.
  void posterior(const Eigen::VectorXd& y, Eigen::VectorXd& mean, Eigen::VectorXd& var,
                 Eigen::VectorXd* mean_at_obs = nullptr) const;

  double kernel(const GpHyper& h, const GpPoint& a, const GpPoint& b) const;

 private:
  std::pair<double, double> distances(const GpHyper& h, const GpPoint& a, const GpPoint& b) const;
  void rebuild();
  void extend(const GpPoint& x);  // one more observation with the current hyper-parameters

  size_t no_, nc_;
  std::vector<GpPoint> cands_;
  std::vector<GpPoint> obs_;
  GpHyper hyper_;
  Eigen::MatrixXd L_;  // Cholesky factor of K(X,X) + noise I (+ jitter)
  Eigen::MatrixXd V_;  // L^-1 K(X, C), observations x candidates
  double jitter_ = 0;
};

// log(z Phi(z) + phi(z)), accurate far into the negative tail.
double log_h(double z);

}  // namespace acceltune
