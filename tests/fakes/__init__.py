"""Fakes for boundaries that cannot exist on this machine (the NVIDIA driver).

``tests.fakes.nvml`` builds a fake ``libnvidia-ml.so.1`` from ``fake_nvml.c`` and writes
the scenario files it serves; the real NVML code path (runner/telemetry/nvmllib) runs against it."""
