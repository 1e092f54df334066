// The definitions behind search/gp.hpp: a Gaussian-process model over a fixed, finite candidate
// set.
#include "search/gp.hpp"

#include <nlopt.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tuner/rng.hpp"

namespace acceltune {

namespace {
constexpr double kSqrt5 = 2.23606797749979;
constexpr double kMinLength = 0.03, kMaxLength = 30.0;
// Different categorical values (algorithms, protocols) correlate at most exp(-0.2) = 0.82:
// treating them as nearly the same stops the search from exploring the categories, whose
// effect on communication bandwidth is large.
constexpr double kMinLambda = 0.2, kMaxLambda = 20.0;
constexpr double kMinSignal = 0.05, kMaxSignal = 20.0;
constexpr double kMinNoise = 1e-6, kMaxNoise = 2.0;
// The quadratic part may all but vanish where the objective has no peak inside the range.
constexpr double kMinQuadratic = 1e-4, kMaxQuadratic = kMaxSignal;
constexpr double kInitialQuadratic = 0.3;
}  // namespace

double log_h(double z) {
  // Direct below |z| = 12 (the cancellation costs about log10(z^2) digits, still ~1e-13 here).
  if (z > -12.0) {
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
    return std::log(std::max(z * cdf + pdf, 1e-300));
  }
  // h(z) = phi(z) / z^2 * (1 - 3/z^2 + 15/z^4 - 105/z^6 + ...), for large negative z.
  const double z2 = z * z;
  return -0.5 * z2 - 0.5 * std::log(2.0 * M_PI) - std::log(z2) +
         std::log1p(-3.0 / z2 + 15.0 / (z2 * z2) - 105.0 / (z2 * z2 * z2));
}

CandidateGp::CandidateGp(size_t ordered_dims, size_t categorical_dims, bool quadratic)
    : no_(ordered_dims), nc_(categorical_dims), quad_(quadratic && ordered_dims > 0) {
  hyper_.length.assign(no_, 0.3);
  hyper_.lambda.assign(nc_, 1.0);
  if (quad_) hyper_.quadratic = kInitialQuadratic;
}

// The scaled squared distance over ordered dims and the weighted mismatches over categorical ones.
std::pair<double, double> CandidateGp::distances(const GpHyper& h, const GpPoint& a, const GpPoint& b) const {
  double r2 = 0;
  for (size_t d = 0; d < no_; ++d) {
    const double t = (a.ordered[d] - b.ordered[d]) / h.length[d];
    r2 += t * t;
  }
  double hamming = 0;
  for (size_t c = 0; c < nc_; ++c) hamming += a.categorical[c] != b.categorical[c] ? h.lambda[c] : 0.0;
  return {r2, hamming};
}

double CandidateGp::quadratic_features(const GpPoint& a, const GpPoint& b) const {
  double sum = 0;
  for (size_t d = 0; d < no_; ++d) {
    const double ua = a.ordered[d] - 0.5, ub = b.ordered[d] - 0.5;
    const double p = ua * ub;
    sum += 4.0 * p + 16.0 * p * p;
  }
  return sum / static_cast<double>(no_);
}

double CandidateGp::kernel(const GpHyper& h, const GpPoint& a, const GpPoint& b) const {
  const auto [r2, hamming] = distances(h, a, b);
  const double r = std::sqrt(r2);
  const double matern = h.signal * (1.0 + kSqrt5 * r + 5.0 / 3.0 * r2) * std::exp(-kSqrt5 * r);
  const double quad = quad_ ? h.quadratic * quadratic_features(a, b) : 0.0;
  return (matern + quad) * std::exp(-hamming);
}

void CandidateGp::set_candidates(std::vector<GpPoint> candidates) {
  cands_ = std::move(candidates);
  rebuild();
}

void CandidateGp::add_observation(const GpPoint& x) {
  obs_.push_back(x);
  extend(x);
}

void CandidateGp::set_observations(std::vector<GpPoint> xs) {
  obs_ = std::move(xs);
  rebuild();
}

void CandidateGp::add_observations(const std::vector<GpPoint>& xs) {
  const Eigen::Index n = static_cast<Eigen::Index>(obs_.size());
  const Eigen::Index p = static_cast<Eigen::Index>(xs.size());
  const Eigen::Index m = static_cast<Eigen::Index>(cands_.size());
  if (p == 0) return;
  obs_.insert(obs_.end(), xs.begin(), xs.end());
  if (n == 0) {
    rebuild();
    return;
  }
  // With K = [[A, B^T], [B, D]] and A = L L^T: the new rows of the factor are [W, C] with
  // W = B L^-T and C C^T = D - W W^T; the new rows of V are C^-1 (K(new, cands) - W V).
  Eigen::MatrixXd B(p, n), D(p, p);
  for (Eigen::Index i = 0; i < p; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) B(i, j) = kernel(hyper_, xs[static_cast<size_t>(i)], obs_[static_cast<size_t>(j)]);
    for (Eigen::Index j = 0; j <= i; ++j) {
      D(i, j) = D(j, i) = kernel(hyper_, xs[static_cast<size_t>(i)], xs[static_cast<size_t>(j)]);
    }
  }
  D.diagonal().array() += hyper_.noise + jitter_;
  const Eigen::MatrixXd W = L_.triangularView<Eigen::Lower>().solve(B.transpose()).transpose();
  D.noalias() -= W * W.transpose();
  Eigen::LLT<Eigen::MatrixXd> llt(D);
  // A repeated or nearly repeated point can make a new pivot vanish: refactor with jitter.
  const Eigen::MatrixXd C = llt.matrixL();
  if (llt.info() != Eigen::Success || !(C.diagonal().array() > std::sqrt(1e-10 * hyper_.signal)).all()) {
    rebuild();
    return;
  }
  Eigen::MatrixXd L = Eigen::MatrixXd::Zero(n + p, n + p);
  L.topLeftCorner(n, n) = L_;
  L.bottomLeftCorner(p, n) = W;
  L.bottomRightCorner(p, p) = C;
  L_.swap(L);
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> rows(p, m);
  for (Eigen::Index i = 0; i < p; ++i) {
    for (Eigen::Index j = 0; j < m; ++j) rows(i, j) = kernel(hyper_, xs[static_cast<size_t>(i)], cands_[static_cast<size_t>(j)]);
  }
  rows.noalias() -= W * V_;
  C.triangularView<Eigen::Lower>().solveInPlace(rows);
  V_.conservativeResize(n + p, m);
  V_.bottomRows(p) = rows;
  explained_ += rows.colwise().squaredNorm().transpose();
}

void CandidateGp::set_hyper(const GpHyper& h) {
  hyper_ = h;
  rebuild();
}

void CandidateGp::rebuild() {
  // In one block (Cholesky, then one triangular solve for V), not observation by observation.
  const Eigen::Index n = static_cast<Eigen::Index>(obs_.size());
  const Eigen::Index m = static_cast<Eigen::Index>(cands_.size());
  jitter_ = 0;
  prior_.resize(m);
  for (Eigen::Index j = 0; j < m; ++j) {
    const GpPoint& c = cands_[static_cast<size_t>(j)];
    prior_[j] = kernel(hyper_, c, c);
  }
  if (n == 0) {
    L_.resize(0, 0);
    V_.resize(0, m);
    explained_ = Eigen::VectorXd::Zero(m);
    return;
  }
  Eigen::MatrixXd K(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j <= i; ++j) {
      K(i, j) = K(j, i) = kernel(hyper_, obs_[static_cast<size_t>(i)], obs_[static_cast<size_t>(j)]);
    }
  }
  K.diagonal().array() += hyper_.noise;
  Eigen::LLT<Eigen::MatrixXd> llt(K);
  while (llt.info() != Eigen::Success && jitter_ < 1e-2 * hyper_.signal) {
    const double more = jitter_ == 0 ? 1e-8 * hyper_.signal : jitter_ * 99;
    K.diagonal().array() += more;
    jitter_ += more;
    llt.compute(K);
  }
  L_ = llt.matrixL();
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> KC(n, m);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < m; ++j) KC(i, j) = kernel(hyper_, obs_[static_cast<size_t>(i)], cands_[static_cast<size_t>(j)]);
  }
  L_.triangularView<Eigen::Lower>().solveInPlace(KC);
  V_.swap(KC);
  explained_ = V_.colwise().squaredNorm().transpose();
}

void CandidateGp::extend(const GpPoint& x) {
  const Eigen::Index n = static_cast<Eigen::Index>(obs_.size()) - 1;  // x is already in obs_
  const Eigen::Index m = static_cast<Eigen::Index>(cands_.size());
  Eigen::VectorXd k(n);
  for (Eigen::Index i = 0; i < n; ++i) k[i] = kernel(hyper_, obs_[static_cast<size_t>(i)], x);
  Eigen::VectorXd l = n > 0 ? Eigen::VectorXd(L_.triangularView<Eigen::Lower>().solve(k)) : Eigen::VectorXd(0);
  double diag = kernel(hyper_, x, x) + hyper_.noise + jitter_ - l.squaredNorm();
  // A repeated or nearly repeated point can make the new pivot vanish: refactor with jitter.
  if (!(diag > 1e-10 * hyper_.signal)) {
    rebuild();
    return;
  }
  const double pivot = std::sqrt(diag);
  Eigen::MatrixXd L(n + 1, n + 1);
  L.setZero();
  if (n > 0) {
    L.topLeftCorner(n, n) = L_;
    L.block(n, 0, 1, n) = l.transpose();
  }
  L(n, n) = pivot;
  L_.swap(L);
  // New row of V: (k(x, C) - l^T V) / pivot.
  Eigen::RowVectorXd row(m);
  for (Eigen::Index j = 0; j < m; ++j) row[j] = kernel(hyper_, x, cands_[static_cast<size_t>(j)]);
  if (n > 0) row.noalias() -= l.transpose() * V_;
  row /= pivot;
  V_.conservativeResize(n + 1, m);
  V_.row(n) = row;
  explained_ += row.transpose().cwiseAbs2();
}

double CandidateGp::log_marginal_likelihood(const GpHyper& h, const Eigen::VectorXd& y,
                                            std::vector<double>* grad) const {
  const Eigen::Index n = static_cast<Eigen::Index>(obs_.size());
  Eigen::MatrixXd Kf(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j <= i; ++j) {
      Kf(i, j) = Kf(j, i) = kernel(h, obs_[static_cast<size_t>(i)], obs_[static_cast<size_t>(j)]);
    }
  }
  Eigen::MatrixXd K = Kf;
  K.diagonal().array() += h.noise;
  Eigen::LLT<Eigen::MatrixXd> llt;
  double jitter = 0;
  for (int attempt = 0; attempt < 6; ++attempt) {
    llt.compute(K);
    if (llt.info() == Eigen::Success) break;
    jitter = jitter == 0 ? 1e-8 * h.signal : jitter * 10;
    K.diagonal().array() += jitter;
  }
  if (llt.info() != Eigen::Success) return -1e300;
  const Eigen::VectorXd alpha = llt.solve(y);
  const Eigen::MatrixXd& L = llt.matrixLLT();
  double logdet = 0;
  for (Eigen::Index i = 0; i < n; ++i) logdet += std::log(L(i, i));
  const double lml = -0.5 * y.dot(alpha) - logdet - 0.5 * static_cast<double>(n) * std::log(2.0 * M_PI);
  if (grad) {
    // d lml / d theta = 1/2 tr((alpha alpha^T - K^-1) dK/dtheta); K^-1 from the factor.
    const Eigen::MatrixXd W = alpha * alpha.transpose() - llt.solve(Eigen::MatrixXd::Identity(n, n));
    grad->assign(hyper_count(), 0.0);
    const size_t iq = no_ + nc_ + 2;  // the quadratic variance, when the kernel has that part
    for (Eigen::Index i = 0; i < n; ++i) {
      const GpPoint& a = obs_[static_cast<size_t>(i)];
      for (Eigen::Index j = 0; j < i; ++j) {
        const GpPoint& b = obs_[static_cast<size_t>(j)];
        const double w = W(i, j);  // off-diagonal pairs count twice, halved by the 1/2
        const auto [r2, hamming] = distances(h, a, b);
        const double r = std::sqrt(r2);
        const double e = std::exp(-kSqrt5 * r - hamming);
        const double matern = h.signal * (1.0 + kSqrt5 * r + 5.0 / 3.0 * r2) * e;
        const double quad = quad_ ? h.quadratic * quadratic_features(a, b) * std::exp(-hamming) : 0.0;
        const double dm = h.signal * 5.0 / 3.0 * (1.0 + kSqrt5 * r) * e;  // times (delta/l)^2
        for (size_t d = 0; d < no_; ++d) {
          const double t = (a.ordered[d] - b.ordered[d]) / h.length[d];
          (*grad)[d] += w * dm * t * t;
        }
        for (size_t c = 0; c < nc_; ++c) {
          if (a.categorical[c] != b.categorical[c]) (*grad)[no_ + c] += w * (matern + quad) * (-h.lambda[c]);
        }
        (*grad)[no_ + nc_] += w * matern;
        if (quad_) (*grad)[iq] += w * quad;
      }
      (*grad)[no_ + nc_] += 0.5 * W(i, i) * h.signal;
      (*grad)[no_ + nc_ + 1] += 0.5 * W(i, i) * h.noise;
      if (quad_) (*grad)[iq] += 0.5 * W(i, i) * h.quadratic * quadratic_features(a, a);
    }
  }
  return lml;
}

namespace {

struct FitContext {
  const CandidateGp* gp;
  const Eigen::VectorXd* y;
  size_t no, nc;
  bool quad;
  int evaluations = 0;
};

// The log hyper-parameters in the gradient's order; the quadratic variance last, when the kernel
// has that part.
GpHyper unpack(const std::vector<double>& t, size_t no, size_t nc, bool quad) {
  GpHyper h;
  for (size_t d = 0; d < no; ++d) h.length.push_back(std::exp(t[d]));
  for (size_t c = 0; c < nc; ++c) h.lambda.push_back(std::exp(t[no + c]));
  h.signal = std::exp(t[no + nc]);
  h.noise = std::exp(t[no + nc + 1]);
  if (quad) h.quadratic = std::exp(t[no + nc + 2]);
  return h;
}

std::vector<double> pack(const GpHyper& h, bool quad) {
  std::vector<double> t;
  for (double l : h.length) t.push_back(std::log(l));
  for (double l : h.lambda) t.push_back(std::log(l));
  t.push_back(std::log(h.signal));
  t.push_back(std::log(h.noise));
  // A part switched off (0) restarts from its lower bound.
  if (quad) t.push_back(std::log(std::max(h.quadratic, kMinQuadratic)));
  return t;
}

double objective(unsigned, const double* x, double* grad, void* data) {
  auto* ctx = static_cast<FitContext*>(data);
  ++ctx->evaluations;
  const size_t dims = ctx->gp->hyper_count();
  std::vector<double> t(x, x + dims);
  std::vector<double> g;
  const double lml = ctx->gp->log_marginal_likelihood(unpack(t, ctx->no, ctx->nc, ctx->quad), *ctx->y, grad ? &g : nullptr);
  if (grad) {
    for (size_t i = 0; i < dims; ++i) grad[i] = std::isfinite(g[i]) ? g[i] : 0.0;
  }
  return std::isfinite(lml) ? lml : -1e300;
}

}  // namespace

double CandidateGp::fit(const Eigen::VectorXd& y, uint64_t seed, int starts) {
  const size_t dims = hyper_count();
  std::vector<double> lo, hi;
  for (size_t d = 0; d < no_; ++d) {
    lo.push_back(std::log(kMinLength));
    hi.push_back(std::log(kMaxLength));
  }
  for (size_t c = 0; c < nc_; ++c) {
    lo.push_back(std::log(kMinLambda));
    hi.push_back(std::log(kMaxLambda));
  }
  lo.push_back(std::log(kMinSignal));
  hi.push_back(std::log(kMaxSignal));
  lo.push_back(std::log(kMinNoise));
  hi.push_back(std::log(kMaxNoise));
  if (quad_) {
    lo.push_back(std::log(kMinQuadratic));
    hi.push_back(std::log(kMaxQuadratic));
  }

  std::vector<std::vector<double>> inits;
  inits.push_back(pack(hyper_, quad_));  // warm start from the last fit
  GpHyper neutral;
  neutral.length.assign(no_, 0.3);
  neutral.lambda.assign(nc_, 1.0);
  if (quad_) neutral.quadratic = kInitialQuadratic;
  if (starts >= 2) inits.push_back(pack(neutral, quad_));
  Rng rng(seed);
  while (static_cast<int>(inits.size()) < std::max(starts, 1)) {
    std::vector<double> t(dims);
    for (size_t i = 0; i < dims; ++i) t[i] = lo[i] + (hi[i] - lo[i]) * (0.2 + 0.6 * rng.uniform());
    inits.push_back(t);
  }
  FitContext ctx{this, &y, no_, nc_, quad_};
  double best = -std::numeric_limits<double>::infinity();
  std::vector<double> best_t = inits[0];
  for (auto& t : inits) {
    for (size_t i = 0; i < dims; ++i) t[i] = std::clamp(t[i], lo[i], hi[i]);
    nlopt::opt opt(nlopt::LD_LBFGS, static_cast<unsigned>(dims));
    opt.set_lower_bounds(lo);
    opt.set_upper_bounds(hi);
    opt.set_max_objective(objective, &ctx);
    opt.set_maxeval(60);
    opt.set_ftol_rel(1e-6);
    double value = -std::numeric_limits<double>::infinity();
    try {
      opt.optimize(t, value);
    } catch (const std::exception&) {
      value = objective(static_cast<unsigned>(dims), t.data(), nullptr, &ctx);  // keep what it reached
    }
    if (value > best) {
      best = value;
      best_t = t;
    }
  }
  set_hyper(unpack(best_t, no_, nc_, quad_));
  return best;
}

void CandidateGp::fit_sampled(const Eigen::VectorXd& y, uint64_t seed, int starts, size_t max_points) {
  if (obs_.size() <= max_points) {
    fit(y, seed, starts);
    return;
  }
  Rng rng(hash_combine(seed, "sample"));
  std::vector<size_t> order(obs_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = 0; i < max_points; ++i) std::swap(order[i], order[i + rng.below(order.size() - i)]);
  CandidateGp sample(no_, nc_, quad_);
  sample.hyper_ = hyper_;  // warm start
  std::vector<GpPoint> xs;
  Eigen::VectorXd ys(static_cast<Eigen::Index>(max_points));
  for (size_t i = 0; i < max_points; ++i) {
    xs.push_back(obs_[order[i]]);
    ys[static_cast<Eigen::Index>(i)] = y[static_cast<Eigen::Index>(order[i])];
  }
  sample.set_observations(std::move(xs));
  sample.fit(ys, seed, starts);
  set_hyper(sample.hyper());
}

void CandidateGp::posterior(const Eigen::VectorXd& y, Eigen::VectorXd& mean, Eigen::VectorXd& var,
                            Eigen::VectorXd* mean_at_obs) const {
  const Eigen::Index m = static_cast<Eigen::Index>(cands_.size());
  const Eigen::Index n = static_cast<Eigen::Index>(obs_.size());
  if (n == 0) {
    mean = Eigen::VectorXd::Zero(m);
    var = prior_;
    if (mean_at_obs) mean_at_obs->resize(0);
    return;
  }
  const Eigen::VectorXd beta = L_.triangularView<Eigen::Lower>().solve(y);
  mean.noalias() = V_.transpose() * beta;
  var = (prior_.array() - explained_.array()).max(1e-12 * hyper_.signal).matrix();
  if (mean_at_obs) {
    // K_f alpha = (K - noise I) alpha = y - (noise + jitter) alpha.
    const Eigen::VectorXd alpha = L_.transpose().triangularView<Eigen::Upper>().solve(beta);
    *mean_at_obs = y - (hyper_.noise + jitter_) * alpha;
  }
}

std::pair<double, double> CandidateGp::predict(const Eigen::VectorXd& y, const GpPoint& x) const {
  const double prior = kernel(hyper_, x, x);
  const Eigen::Index n = static_cast<Eigen::Index>(obs_.size());
  if (n == 0) return {0.0, prior};
  Eigen::VectorXd k(n);
  for (Eigen::Index i = 0; i < n; ++i) k[i] = kernel(hyper_, obs_[static_cast<size_t>(i)], x);
  L_.triangularView<Eigen::Lower>().solveInPlace(k);
  const Eigen::VectorXd beta = L_.triangularView<Eigen::Lower>().solve(y);
  return {k.dot(beta), std::max(prior - k.squaredNorm(), 1e-12 * hyper_.signal)};
}

Eigen::VectorXd CandidateGp::loo_residuals(const Eigen::VectorXd& y) const {
  const Eigen::Index n = static_cast<Eigen::Index>(obs_.size());
  if (n == 0) return Eigen::VectorXd(0);
  // With K = L L^T: alpha = K^-1 y, and diag(K^-1) as the column norms of L^-1.
  Eigen::MatrixXd inv = Eigen::MatrixXd::Identity(n, n);
  L_.triangularView<Eigen::Lower>().solveInPlace(inv);
  const Eigen::VectorXd diag = inv.colwise().squaredNorm().transpose();
  const Eigen::VectorXd alpha = L_.transpose().triangularView<Eigen::Upper>().solve(L_.triangularView<Eigen::Lower>().solve(y));
  return alpha.array() / diag.array().sqrt();
}

PointEncoder::PointEncoder(const Space& space, std::vector<uint64_t> sizes) : space_(&space), sizes_(std::move(sizes)) {
  std::sort(sizes_.begin(), sizes_.end());
  sizes_.erase(std::unique(sizes_.begin(), sizes_.end()), sizes_.end());
  for (size_t k = 0; k < space.params().size(); ++k) {
    if (is_ordered(space.params()[k].kind)) ordered_.push_back(k);
    else categorical_.push_back(k);
  }
  if (!sizes_.empty()) {
    lo_ = std::log2(static_cast<double>(std::max<uint64_t>(sizes_.front(), 1)));
    hi_ = std::log2(static_cast<double>(std::max<uint64_t>(sizes_.back(), 1)));
  }
}

GpPoint PointEncoder::point(const Config& c, uint64_t bytes) const {
  GpPoint p;
  const auto enc = space_->encode(c);
  for (size_t k : ordered_) p.ordered.push_back(enc[k]);
  if (sizes_.size() > 1) {
    const double x = std::log2(static_cast<double>(std::max<uint64_t>(bytes, 1)));
    p.ordered.push_back(hi_ > lo_ ? (x - lo_) / (hi_ - lo_) : 0.0);
  }
  for (size_t k : categorical_) p.categorical.push_back(static_cast<int>(c.index[k]));
  return p;
}

Targets standardise(const std::vector<double>& values, const std::vector<uint64_t>& bytes, bool clip_low_tail) {
  Targets t;
  t.log_scale = std::all_of(values.begin(), values.end(), [](double v) { return v > 0; });
  std::vector<double> raw;
  std::map<uint64_t, std::vector<double>> by_size;
  for (size_t i = 0; i < values.size(); ++i) {
    raw.push_back(t.log_scale ? std::log(values[i]) : values[i]);
    by_size[bytes[i]].push_back(raw.back());
  }
  // With clip_low_tail, the low tail is clipped: a config far below the rest of its size (a pathological chunking,
  // a stalled run) is bad, and how bad does not matter to a maximisation, but its distance
  // would set the noise and the scale of the whole model, which then smooths over the top
  // (posterior means far from their own measurements). The floor: four robust standard
  // deviations (1.4826 times the median absolute deviation from each size's median) below that
  // size's median.
  std::map<uint64_t, double> median;
  std::vector<double> deviations;
  auto median_of = [](std::vector<double> v) {
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    return *mid;
  };
  for (const auto& [b, v] : by_size) {
    median[b] = median_of(v);
    for (double x : v) deviations.push_back(std::abs(x - median[b]));
  }
  const double robust = deviations.empty() ? 0.0 : 1.4826 * median_of(deviations);
  if (clip_low_tail && robust > 0) {
    for (size_t i = 0; i < raw.size(); ++i) raw[i] = std::max(raw[i], median[bytes[i]] - 4 * robust);
  }
  std::map<uint64_t, std::pair<double, int>> per_size;
  for (size_t i = 0; i < raw.size(); ++i) {
    auto& s = per_size[bytes[i]];
    s.first += raw[i];
    s.second += 1;
  }
  for (const auto& [b, s] : per_size) t.centre[b] = s.first / s.second;
  t.y.resize(static_cast<Eigen::Index>(raw.size()));
  double ss = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    const double z = raw[i] - t.centre[bytes[i]];
    t.y[static_cast<Eigen::Index>(i)] = z;
    ss += z * z;
  }
  const double sd = raw.size() > 1 ? std::sqrt(ss / static_cast<double>(raw.size() - 1)) : 1.0;
  t.scale = std::max(sd, 1e-9);
  t.y /= t.scale;
  return t;
}

double Targets::to_value(double z, uint64_t bytes) const {
  auto it = centre.find(bytes);
  const double raw = z * scale + (it == centre.end() ? 0.0 : it->second);
  return log_scale ? std::exp(raw) : raw;
}

}  // namespace acceltune
