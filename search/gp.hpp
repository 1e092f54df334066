// A Gaussian-process model over a fixed, finite candidate set. Kernel: exp(-sum_c lambda_c
// [a_c != b_c]) over categorical dimensions, times the sum of signal variance x Matern 5/2 with a
// length scale per ordered dimension and, optionally, a quadratic part (its own variance x the
// mean over ordered dims of phi(a_d).phi(b_d), phi(x) = (2u, 4u^2), u = x - 1/2), plus a noise
// term. In log space a bandwidth's dependence on one parameter is often a bell, quadratic near its
// peak: the quadratic part lets a few observations place that peak, where the Matern alone reverts
// to the mean. Hyper-parameters maximise the log marginal likelihood (L-BFGS from several starts,
// analytic gradient). Solves go through the Cholesky factor; the posterior at every candidate is
// kept incrementally: V = L^-1 K(X, C) gains one row per observation (O(n m)), so an ask costs
// O(n m) between hyper-parameter fits.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "tuner/space.hpp"

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
  double quadratic = 0;        // variance of the quadratic part (0: none)
};

class CandidateGp {
 public:
  // `quadratic`: the kernel has the quadratic part (when there are ordered dims). The search
  // uses it; the recommender does not, since with it a fit may shrink the Matern's length scales
  // until neighbours no longer pool and a lucky measurement ranks first again.
  CandidateGp(size_t ordered_dims, size_t categorical_dims, bool quadratic = false);

  size_t ordered_dims() const { return no_; }
  size_t categorical_dims() const { return nc_; }

  void set_candidates(std::vector<GpPoint> candidates);
  const std::vector<GpPoint>& candidates() const { return cands_; }

  // Observations, in order; `y` is standardised by the caller.
  void add_observation(const GpPoint& x);
  void set_observations(std::vector<GpPoint> xs);  // all at once (one factorisation)
  // Several new observations in one block update of the factor and V: one product with V
  // (O(p n m)) instead of p row updates, each of which copies V.
  void add_observations(const std::vector<GpPoint>& xs);
  size_t observations() const { return obs_.size(); }

  // Fits the hyper-parameters to `y` (one value per observation) and rebuilds the factor and V.
  // Returns the best log marginal likelihood found.
  double fit(const Eigen::VectorXd& y, uint64_t seed, int starts);
  // The same, the hyper-parameters fitted on a random sample of at most `max_points`
  // observations (a fit is cubic in its size), then the model rebuilt on all of them.
  void fit_sampled(const Eigen::VectorXd& y, uint64_t seed, int starts, size_t max_points);
  // The sample size the strategy and the recommendation both fit on.
  static constexpr size_t kFitSample = 300;
  void set_hyper(const GpHyper& h);  // and rebuild
  const GpHyper& hyper() const { return hyper_; }
  // How many hyper-parameters a fit moves: length..., lambda..., signal, noise[, quadratic].
  size_t hyper_count() const { return no_ + nc_ + 2 + (quad_ ? 1 : 0); }

  // Log marginal likelihood of y under hyper-parameters h; its gradient with respect to the
  // log hyper-parameters (length..., lambda..., signal, noise, then quadratic when the kernel has
  // that part) when `grad` is given.
  double log_marginal_likelihood(const GpHyper& h, const Eigen::VectorXd& y, std::vector<double>* grad) const;

  // Posterior mean and variance (of the latent function, without noise) at every candidate,
  // and the posterior mean at the observations.
  void posterior(const Eigen::VectorXd& y, Eigen::VectorXd& mean, Eigen::VectorXd& var,
                 Eigen::VectorXd* mean_at_obs = nullptr) const;

  // Posterior mean and variance (latent, without noise) at one point, candidate or not: O(n^2).
  std::pair<double, double> predict(const Eigen::VectorXd& y, const GpPoint& x) const;
  // Leave-one-out residuals, standardised: for each observation, how far it lies from what the
  // others predict of it, in units of that prediction's standard deviation (noise included). A
  // calibrated model gives about unit variance. O(n^3).
  Eigen::VectorXd loo_residuals(const Eigen::VectorXd& y) const;

  double kernel(const GpHyper& h, const GpPoint& a, const GpPoint& b) const;

 private:
  std::pair<double, double> distances(const GpHyper& h, const GpPoint& a, const GpPoint& b) const;
  // The quadratic part's feature product, mean over ordered dims (without its variance).
  double quadratic_features(const GpPoint& a, const GpPoint& b) const;
  void rebuild();
  void extend(const GpPoint& x);  // one more observation with the current hyper-parameters

  size_t no_, nc_;
  bool quad_;
  std::vector<GpPoint> cands_;
  std::vector<GpPoint> obs_;
  GpHyper hyper_;
  Eigen::MatrixXd L_;  // Cholesky factor of K(X,X) + noise I (+ jitter)
  // L^-1 K(X, C), observations x candidates. Row-major, so an observation's new row is appended
  // in place instead of the whole matrix being copied (it is the model's largest object).
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> V_;
  Eigen::VectorXd prior_;      // k(c, c) per candidate
  Eigen::VectorXd explained_;  // per candidate, the squared norm of its column of V (kept with V)
  double jitter_ = 0;
};

// log(z Phi(z) + phi(z)), accurate far into the negative tail.
double log_h(double z);

// Model inputs for a space's configs at message sizes: the ordered params as the space encodes
// them, the size as one more ordered input on a log scale (when there are several sizes), and the
// categorical params by value index.
class PointEncoder {
 public:
  PointEncoder(const Space& space, std::vector<uint64_t> sizes);
  GpPoint point(const Config& c, uint64_t bytes) const;
  size_t ordered_dims() const { return ordered_.size() + (sizes_.size() > 1 ? 1 : 0); }
  size_t categorical_dims() const { return categorical_.size(); }
  const std::vector<uint64_t>& sizes() const { return sizes_; }
  const std::vector<size_t>& ordered_params() const { return ordered_; }
  const std::vector<size_t>& categorical_params() const { return categorical_; }

 private:
  const Space* space_;
  std::vector<uint64_t> sizes_;
  std::vector<size_t> ordered_, categorical_;
  double lo_ = 0, hi_ = 0;
};

// Standardised targets: the log of the values when all are positive (bandwidths vary by orders
// of magnitude), centred per size, scaled by the overall spread. With clip_low_tail, values far
// below their size's median are raised to a floor first, so that a few pathological
// measurements do not set the model's noise (the recommendation's estimates; the search itself
// keeps them: on the family's held-out seeds clipping there helped multi-size landscapes and
// hurt rugged ones, docs/benchmarks.md).
struct Targets {
  Eigen::VectorXd y;
  bool log_scale = false;
  std::map<uint64_t, double> centre;
  double scale = 1;
  // A model value (standardised) back in the objective's unit.
  double to_value(double z, uint64_t bytes) const;
};
Targets standardise(const std::vector<double>& values, const std::vector<uint64_t>& bytes, bool clip_low_tail = false);

}  // namespace acceltune
