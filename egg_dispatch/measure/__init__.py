"""Plans measured for real: compiled with IREE and timed on this CPU.

* ``bench.py``: our plans against IREE's own, timed interleaved, with the model's predictions
  (``egg-dispatch bench``).
* ``tune.py``: the model's candidate plans measured against IREE's own and a verdict given
  (``egg-dispatch tune``).
* ``stats.py``: paired, interleaved comparisons: the 95% interval, the stopping rule, the verdict,
  Kendall's tau and regret (numbers in, numbers out; a sampler is passed in).
* ``differential.py``: which dispatches two plans share (by their content at IREE's flow phase) and the
  kernel time of those they do not.
* ``stand_in.py``: the parameter files IREE's runtime gets for a model's plans (given, or the
  evaluator's stand-in values).
* ``measured_plan.py``: ``MeasuredPlan``, one plan compiled, checked and timed: the record ``bench``'s
  ``BenchPlan`` and ``tune``'s ``TuneCandidate`` extend.
* ``micro.py``: the calibration's micro-programs, one kind of work per dispatch, at chosen sizes.
* ``calibrate.py``: the calibration run: what to measure (``plan_programs``), compiling and timing
  the micro-programs (``calibrate``), and the profile made of the fits (``profile_dict``; written by
  ``target.profile.write_profile``, beside its reader).
* ``kernel_fit.py``: a calibration's samples (``Calibration``) fitted as the cost model's
  ``KernelCosts`` (``fit_kernels``).
* ``fit.py``: the fits' pure numerics (least squares, residuals, the choices made on them): numbers
  in, numbers and ``Fit`` values out, no IREE, no files.
"""
