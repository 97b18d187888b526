from toolgate._native import PolicyEngine as PolicyEngine
