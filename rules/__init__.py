"""The rule families (``*.egg``), shipped as the package ``egg_dispatch.rules``.

pyproject.toml maps this folder onto that name (``[tool.setuptools.package-dir]``), so a wheel carries
the files inside the package and ``egg_dispatch.egraph.rules`` reads them with ``importlib.resources``.
This file makes the folder a regular package: setuptools' editable installs do not find a namespace
package that ``package-dir`` maps elsewhere (pypa/setuptools#4943), only a regular one. No code.
"""
